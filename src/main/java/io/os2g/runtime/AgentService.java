package io.os2g.runtime;

import io.os2g.diskcache.DiskCache;
import io.os2g.sharedcache.SharedCache;
import io.os2g.link.AgentServer;
import io.os2g.metrics.PrometheusMetrics;
import io.os2g.staging.StagingDirectory;
import io.os2g.staging.StagingException;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A running agent process: the link server on its socket, the staging directory it claimed, an
 * {@link AgentSessions} that opens a session for each shim, and the metrics endpoint. Closing it
 * stops all of them, exactly once.
 */
public final class AgentService implements AutoCloseable {

    private final AgentServer server;
    private final StagingDirectory staging;
    private final HTTPServer metrics;
    private final AtomicBoolean closed = new AtomicBoolean();

    private final DiskCache disk;
    private final SharedCache shared;

    private final AgentServiceConfig config;

    private AgentService(AgentServiceConfig config, AgentServer server, StagingDirectory staging, HTTPServer metrics, DiskCache disk,
                         SharedCache shared) {
        this.config = config;
        this.server = server;
        this.staging = staging;
        this.metrics = metrics;
        this.disk = disk;
        this.shared = shared;
    }

    /**
     * Checks the options (GPU, endpoint, credentials, TLS), claims the staging directory and listens.
     *
     * @throws UsageError for anything the user can fix
     */
    public static AgentService start(AgentServiceConfig config) {
        if (config.gpuDevice() >= 0) {
            CudaDevices.device(config.gpuDevice()); // no driver or no such device: refused now, not at the first mount
        }
        // endpoint, credentials and TLS options (a CA bundle's certificates too) are checked now, not at
        // the first mount; the first mount also no longer waits for the client's classes to load
        Preflight.openStore(config.storeOf().apply("probe")).close();
        StagingDirectory staging;
        try {
            staging = StagingDirectory.claim(config.stagingDir());
        } catch (StagingException e) {
            throw new UsageError(e.getMessage());
        }
        DiskCache disk;
        try {
            disk = Preflight.openCache(config.cache());
        } catch (UsageError e) {
            staging.remove();
            throw e;
        }
        SharedCache shared;
        try {
            shared = SharedCacheSettings.open(config.sharedCache());
        } catch (UsageError e) {
            staging.remove();
            if (disk != null) {
                disk.close();
            }
            throw e;
        }
        AgentSessions sessions = new AgentSessions(config.storeOf(), config.readDeadline(), staging, config.maxFetches(),
                PrometheusMetrics.getSeconds("mount", "source"), config.gpuDevice(), disk, shared, config.policy(), config.memory());
        AgentServer server;
        try {
            server = AgentServer.listen(config.listen(), config.linkTls(), sessions);
        } catch (IOException e) {
            staging.remove();
            closeTiers(disk, shared);
            throw new UsageError("cannot listen on " + config.listen() + ": " + e.getMessage());
        }
        HTTPServer metrics = null;
        if (config.metricsAddress() != null) {
            try {
                metrics = MetricsServer.serve(config.metricsAddress(), PrometheusMetrics.forAgent(sessions::served, sessions.getSeconds()));
            } catch (UsageError e) {
                server.close();
                staging.remove();
                closeTiers(disk, shared);
                throw e;
            }
        }
        return new AgentService(config, server, staging, metrics, disk, shared);
    }

    private static void closeTiers(DiskCache disk, SharedCache shared) {
        if (disk != null) {
            disk.close();
        }
        if (shared != null) {
            shared.close();
        }
    }

    /** Where shims connect, for the log: the address, and on TCP the port and how the link is protected. */
    public String listening() {
        if (!(config.listen() instanceof io.os2g.link.LinkAddress.Tcp tcp)) {
            return config.listen().toString();
        }
        return "tcp://" + tcp.host() + ":" + linkPort() + (config.linkTls() == null ? " (loopback, no TLS)"
                : config.linkTls().encrypt() ? " (mutual TLS)" : " (mutual TLS, then unencrypted)");
    }

    /** The TCP port shims connect to (the one picked for port 0 too); -1 on a Unix socket. */
    public int linkPort() {
        return server.port();
    }

    /** The port metrics are served on; -1 without {@code --metrics-port}. */
    public int metricsPort() {
        return metrics == null ? -1 : metrics.getPort();
    }

    /** Stops serving: the shims' sessions end, their staging regions and the staging directory go. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        if (metrics != null) {
            metrics.close();
        }
        server.close();
        staging.remove();
        closeTiers(disk, shared);
    }
}
