package io.os2g.csi;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.os2g.fuse.DeviceHandoff;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The mounter ({@code os2g csi-mounter}): runs the node's mount processes for the plugin, in a process
 * (a container) of its own that outlives the plugin's restarts and upgrades. Per mount, over a unix
 * socket: the plugin sends the command, the mounter names a handoff socket, the plugin sends the FUSE
 * descriptor there, the mounter starts the process and answers its pid. It reaps its children and writes
 * each one's exit status next to its log, where the plugin looks.
 */
public final class Mounter implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Mounter.class);
    static final ObjectMapper JSON = new ObjectMapper();

    /** What the plugin asks for: a mount process's command, environment and log. */
    record Start(List<String> argv, List<String> env, String log) {
    }

    private final Path socket;
    private final ServerSocketChannel server;
    private final Map<Long, Path> children = new ConcurrentHashMap<>();
    private final AtomicLong handoffs = new AtomicLong();
    private volatile boolean closed;

    private Mounter(Path socket, ServerSocketChannel server) {
        this.socket = socket;
        this.server = server;
    }

    /** Listens at {@code socket} (a stale file there is replaced) and serves until closed. */
    public static Mounter start(Path socket) throws IOException {
        Files.createDirectories(socket.toAbsolutePath().getParent());
        Files.deleteIfExists(socket);
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        Files.setPosixFilePermissions(socket, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Mounter mounter = new Mounter(socket, server);
        Thread.ofPlatform().name("os2g-mounter").daemon().start(mounter::accept);
        Thread.ofPlatform().name("os2g-mounter-reaper").daemon().start(mounter::reap);
        return mounter;
    }

    public Path socket() {
        return socket;
    }

    private void accept() {
        while (!closed) {
            try {
                SocketChannel connection = server.accept();
                Thread.ofPlatform().name("os2g-mounter-call").daemon().start(() -> serve(connection));
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("mounter socket failed: {}", e.toString());
                }
                return;
            }
        }
    }

    /** One mount: the command, the descriptor through a handoff socket, the pid. */
    private void serve(SocketChannel connection) {
        try (connection) {
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(connection), StandardCharsets.UTF_8));
            OutputStream out = Channels.newOutputStream(connection);
            String line = in.readLine();
            if (line == null) {
                return; // hung up
            }
            Start request = JSON.readValue(line, Start.class);
            Path log = Path.of(request.log());
            Path handoffPath = socket.resolveSibling("handoff-" + ProcessHandle.current().pid() + "-" + handoffs.incrementAndGet() + ".sock");
            ObjectNode answer = JSON.createObjectNode();
            try (DeviceHandoff handoff = DeviceHandoff.listen(handoffPath)) {
                write(out, JSON.createObjectNode().put("handoff", handoffPath.toString()));
                in.readLine(); // sent
                int device = handoff.take();
                if (device < 0) {
                    answer.put("error", "no FUSE descriptor arrived at " + handoffPath);
                } else {
                    try {
                        long pid = Libc.spawn(request.argv(), request.env(), device, log);
                        children.put(pid, log);
                        answer.put("pid", pid);
                        LOG.info("started mount process {} (log {})", pid, log);
                    } catch (Libc.Failure e) {
                        answer.put("error", e.getMessage());
                    } finally {
                        Libc.close(device);
                    }
                }
            }
            write(out, answer);
        } catch (IOException | RuntimeException e) {
            LOG.warn("mounter call failed: {}", e.toString());
        }
    }

    static void write(OutputStream out, JsonNode message) throws IOException {
        out.write((JSON.writeValueAsString(message) + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** Collects ended children and writes their exit status where the plugin looks. */
    private void reap() {
        while (!closed) {
            for (Map.Entry<Long, Path> child : children.entrySet()) {
                int status = Libc.reap(child.getKey().intValue());
                if (status >= 0) {
                    children.remove(child.getKey());
                    MountStarter.writeExit(child.getValue(), status);
                    LOG.info("mount process {} ended with status {}", child.getKey(), status);
                }
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Stops taking calls; the mount processes go on (they end with their mounts). */
    @Override
    public void close() {
        closed = true;
        try {
            server.close();
            Files.deleteIfExists(socket);
        } catch (IOException ignored) {
            // going away
        }
    }
}
