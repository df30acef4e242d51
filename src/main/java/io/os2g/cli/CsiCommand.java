package io.os2g.cli;

import io.os2g.runtime.CsiPlugin;
import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "csi", sortOptions = false, usageHelpAutoWidth = true,
        description = {"Run the Kubernetes CSI node plugin: the Identity and Node services on a unix socket. Each volume a pod",
                "asks for is one os2g mount process on the node (shared by the pods of that volume), which outlives the plugin;",
                "a restarted plugin finds its mounts again. Runs as root (it mounts). See docs/KUBERNETES.md."})
final class CsiCommand implements Callable<Integer> {

    private static final Logger LOG = LoggerFactory.getLogger(CsiCommand.class);

    @Option(names = "--endpoint", paramLabel = "unix:///PATH", defaultValue = "unix:///csi/csi.sock",
            description = "The socket the kubelet calls (default: ${DEFAULT-VALUE}).")
    String endpoint;

    @Option(names = "--node-id", required = true, paramLabel = "NODE", description = "This node's name (the pod's spec.nodeName).")
    String nodeId;

    @Option(names = "--state-dir", paramLabel = "DIR", defaultValue = "/var/lib/os2g-csi",
            description = "Where mounts are made and recorded; on the host, shared with the kubelet (default: ${DEFAULT-VALUE}).")
    Path stateDir;

    @Option(names = "--secrets-dir", paramLabel = "DIR", defaultValue = "/run/os2g-csi",
            description = "Where each mount's credentials file is written, on a memory file system (default: ${DEFAULT-VALUE}).")
    Path secretsDir;

    @Option(names = "--staging-dir", paramLabel = "DIR", defaultValue = "/dev/shm/os2g",
            description = "Where each mount's staging region is made, csi-<id> under it (default: ${DEFAULT-VALUE}).")
    Path stagingDir;

    @Option(names = "--mounter", paramLabel = "unix:///PATH",
            description = {"Have os2g csi-mounter at this socket start the mount processes (in Kubernetes: a container of its own,",
                    "which the plugin's restarts leave running); without it they start here, each in a session of its own."})
    String mounter;

    @Option(names = "--agent", paramLabel = "unix:PATH|tcp://HOST:PORT",
            description = {"Read every volume through the node agent (os2g agent --listen), which holds the credentials",
                    "and the store's endpoint for all of them; volumes then carry no secret. tcp://: an agent on this node's DPU or another node."})
    String agent;

    @Mixin
    LinkOptions link = new LinkOptions();

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Override
    public Integer call() throws Exception {
        service.configureLogging();
        if (!"root".equals(System.getProperty("user.name"))) {
            throw new UsageError("os2g csi mounts for pods: run it as root (a privileged container)");
        }
        CsiPlugin.socket("--endpoint", endpoint);
        Path state = stateDir.toAbsolutePath().normalize();
        CsiPlugin plugin = CsiPlugin.start(new CsiPlugin.Config(endpoint, nodeId, version(), state,
                secretsDir.toAbsolutePath().normalize(), stagingDir.toAbsolutePath().normalize(), mountCommand(),
                new VolumeAttributes(state), mounter == null ? null : CsiPlugin.socket("--mounter", mounter),
                CsiPlugin.agentArguments(agent, link.cert, link.key, link.ca, link.encryption)));
        Runtime.getRuntime().addShutdownHook(new Thread(plugin::close, "os2g-csi-shutdown"));
        LOG.info("CSI node plugin {} for node {} listening on unix:{} (mounts in {})", version(), nodeId, plugin.socket(), state);
        plugin.awaitTermination();
        return 0;
    }

    /** {@code os2g mount} on this very build: this JVM with its options and class path. */
    private static List<String> mountCommand() throws IOException {
        String java = ProcessHandle.current().info().command()
                .orElseThrow(() -> new IOException("cannot tell which java runs this process"));
        List<String> command = new ArrayList<>(List.of(java));
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), Os2g.class.getName(), "mount"));
        return command;
    }

    private static String version() {
        String version = CsiCommand.class.getPackage().getImplementationVersion();
        return version != null ? version : "dev";
    }
}
