package io.os2g.csi;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The node plugin's gRPC server on a unix socket, where the kubelet (through the node-driver-registrar)
 * finds it: the CSI Identity and Node services.
 */
public final class CsiServer implements AutoCloseable {

    /** The driver's name: the CSIDriver object's and every volume's {@code spec.csi.driver}. */
    public static final String DRIVER_NAME = "csi.os2g.io";

    private final Path socket;
    private final EpollEventLoopGroup loop;
    private final Server server;

    private CsiServer(Path socket, EpollEventLoopGroup loop, Server server) {
        this.socket = socket;
        this.loop = loop;
        this.server = server;
    }

    /**
     * Serves {@code volumes} as node {@code nodeId} at {@code endpoint} ({@code unix:///csi/csi.sock}, or a
     * path); a socket file left by an earlier plugin is replaced.
     */
    public static CsiServer start(String endpoint, String nodeId, String version, NodeVolumes volumes) throws IOException {
        Path socket = socketPath(endpoint);
        Files.createDirectories(socket.toAbsolutePath().getParent());
        Files.deleteIfExists(socket);
        EpollEventLoopGroup loop = new EpollEventLoopGroup(1);
        Server server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
                .channelType(EpollServerDomainSocketChannel.class)
                .bossEventLoopGroup(loop)
                .workerEventLoopGroup(loop)
                .withChildOption(ChannelOption.SO_KEEPALIVE, null) // a TCP option: unknown to a unix socket, warned of per call
                .addService(new IdentityService(version))
                .addService(new NodeService(nodeId, volumes))
                .build();
        try {
            return new CsiServer(socket, loop, server.start());
        } catch (IOException | RuntimeException e) {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw e;
        }
    }

    /** The socket path of {@code unix:///path}, {@code unix:/path} or a plain path. */
    public static Path socketPath(String endpoint) {
        String path = endpoint.startsWith("unix://") ? endpoint.substring("unix://".length())
                : endpoint.startsWith("unix:") ? endpoint.substring("unix:".length()) : endpoint;
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("must be unix:///ABSOLUTE/PATH: " + endpoint);
        }
        return Path.of(path);
    }

    public Path socket() {
        return socket;
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    /** Stops taking calls; the mounts stay (they are not this process's). */
    @Override
    public void close() {
        server.shutdown();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        server.shutdownNow();
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        try {
            Files.deleteIfExists(socket);
        } catch (IOException ignored) {
            // the next plugin replaces it
        }
    }
}
