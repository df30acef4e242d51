package io.os2g.runtime;

import io.os2g.csi.CsiException;
import io.os2g.csi.CsiServer;
import io.os2g.csi.MountArguments;
import io.os2g.csi.MountStarter;
import io.os2g.csi.Mounter;
import io.os2g.csi.MounterClient;
import io.os2g.csi.NodeVolumes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The Kubernetes node plugin ({@code os2g csi}) put together: the node's volumes, started here or by the
 * mounter, read directly or through the node agent, served on the kubelet's socket.
 */
public final class CsiPlugin implements AutoCloseable {

    /** File systems that keep their files in memory: credentials never reach a disk. */
    private static final Set<String> MEMORY_FILE_SYSTEMS = Set.of("tmpfs", "ramfs");

    /**
     * @param endpoint the kubelet's socket ({@code unix:///csi/csi.sock})
     * @param mountCommand the words that run {@code os2g mount} on this build
     * @param attributes how a volume's attributes become mount options
     * @param mounter the socket of {@code os2g csi-mounter}, or null to start mount processes here
     * @param agent the mount options naming the node agent ({@link #agentArguments}); empty for mounts with their own store client
     */
    public record Config(String endpoint, String nodeId, String version, Path stateDir, Path secretsDir, Path stagingDir,
                         List<String> mountCommand, VolumeOptions attributes, Path mounter, List<String> agent) {
    }

    /**
     * Turns a volume's attributes and mount options into the words of an {@code os2g mount} command: the
     * source ({@code BUCKET[/PREFIX]}) first, then the options, checked by the mount's own rules.
     */
    @FunctionalInterface
    public interface VolumeOptions {
        /**
         * @param options os2g options from the capability's mount_flags, in the attributes' spelling
         * @throws UsageError naming the attribute or option that is unknown, malformed or not allowed (the call's INVALID_ARGUMENT)
         */
        List<String> of(Map<String, String> attributes, Map<String, String> options);
    }

    private final CsiServer server;

    private CsiPlugin(CsiServer server) {
        this.server = server;
    }

    /**
     * Checks the directories (the secrets dir must be in memory), finds the mounts a previous plugin made
     * and serves.
     *
     * @throws UsageError for a secrets dir on a disk
     */
    public static CsiPlugin start(Config config) throws IOException {
        Files.createDirectories(config.stateDir());
        Files.createDirectories(config.secretsDir());
        String type = Files.getFileStore(config.secretsDir()).type();
        if (!MEMORY_FILE_SYSTEMS.contains(type)) {
            throw new UsageError("--secrets-dir " + config.secretsDir() + " is on " + type + ", not a memory file system (tmpfs): "
                    + "credentials would be written to disk");
        }
        MountStarter starter = config.mounter() == null ? MountStarter.local() : new MounterClient(config.mounter());
        MountArguments arguments = (attributes, options) -> {
            try {
                return config.attributes().of(attributes, options);
            } catch (UsageError e) {
                throw CsiException.invalid(e.getMessage());
            }
        };
        NodeVolumes volumes = new NodeVolumes(config.stateDir(), config.secretsDir(), config.stagingDir(), config.mountCommand(),
                arguments, starter, config.agent());
        return new CsiPlugin(CsiServer.start(config.endpoint(), config.nodeId(), config.version(), volumes));
    }

    /**
     * Runs the mount processes of the node's plugins ({@code os2g csi-mounter}) on {@code listen}
     * ({@code unix:///PATH}); returns what stops it (its mounts end with it).
     */
    public static Runnable startMounter(String listen) throws IOException {
        return Mounter.start(socket("--listen", listen))::close;
    }

    /** The socket path {@code option} gives ({@code unix:///PATH}), or its one-line refusal. */
    /**
     * The options every volume's mount gets to read through the node agent at {@code address}
     * ({@code unix:PATH}, or {@code tcp://HOST:PORT} with the link's TLS files and, where asked, an
     * unencrypted link); empty for none.
     *
     * @throws UsageError for an address or TLS files a mount would refuse
     */
    public static List<String> agentArguments(String address, Path cert, Path key, Path ca, String encryption) {
        if (address == null) {
            if (cert != null || key != null || ca != null || encryption != null) {
                throw new UsageError("--link-cert, --link-key and --link-ca are for --agent tcp://HOST:PORT");
            }
            return List.of();
        }
        io.os2g.link.LinkAddress agent = LinkSettings.address("--agent", address);
        LinkSettings.tls("--agent", agent, cert, key, ca, encryption);
        List<String> args = new java.util.ArrayList<>(List.of("--agent", agent.toString()));
        if (cert != null) {
            args.addAll(List.of("--link-cert", cert.toAbsolutePath().toString(), "--link-key", key.toAbsolutePath().toString(),
                    "--link-ca", ca.toAbsolutePath().toString()));
        }
        if (encryption != null) {
            args.addAll(List.of("--link-encryption", encryption));
        }
        return args;
    }

    public static Path socket(String option, String value) {
        try {
            return CsiServer.socketPath(value);
        } catch (IllegalArgumentException e) {
            throw new UsageError(option + " " + e.getMessage());
        }
    }

    public Path socket() {
        return server.socket();
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    /** Stops taking calls; the mounts go on serving. */
    @Override
    public void close() {
        server.close();
    }
}
