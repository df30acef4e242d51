package io.os2g.runtime;

import io.os2g.agent.AgentPolicy;
import io.os2g.agentreplies.FuseDeviceLender;
import io.os2g.host.FuseMount;
import io.os2g.host.Os2gFileSystem;
import io.os2g.link.AgentLink;
import io.os2g.link.InProcessLink;
import io.os2g.link.LinkAddress;
import io.os2g.link.LinkException;
import io.os2g.link.MountSpec;
import io.os2g.link.SocketLink;
import io.os2g.metrics.AgentCounters;
import io.os2g.metrics.PrometheusMetrics;
import io.os2g.metrics.ShimMetrics;
import io.os2g.metrics.Stats;
import io.os2g.namespace.Namespace;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.GpuRegistration;
import io.os2g.staging.StagingException;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running mount: the composition root. The shim (namespace, file system, FUSE mount) talks to an
 * agent in this process or in an agent process ({@link MountConfig#agentAddress}). Closing it
 * unmounts, stops the agent side and frees the staging region, whichever way the mount ends
 * (signal, fusermount -u, error), exactly once.
 */
public final class Gateway implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);

    private final MountConfig config;
    private final ShimMetrics metrics;
    private final Namespace namespace;
    private final AgentLink link;
    private final Backend backend;
    private final Os2gFileSystem fs;
    private final FuseMount mount;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Histogram getSeconds;
    private HTTPServer metricsServer;

    /** What lies behind the link, closed after it. */
    private interface Backend {
        /** The agent's counters for {@code /.os2g/stats}; null when they cannot be had now. */
        Map<String, Object> stats();

        /** The in-process agent's counters for the metrics endpoint; null in split mode (the agent serves its own). */
        AgentCounters counters();

        /** Frees what the agent side holds; returns the agent's part of the unmount summary. */
        String close();
    }

    private Gateway(MountConfig config, Namespace namespace, AgentLink link, Backend backend, ShimMetrics metrics,
                    Histogram getSeconds) {
        this.config = config;
        this.getSeconds = getSeconds;
        this.namespace = namespace;
        this.link = link;
        this.backend = backend;
        this.metrics = metrics;
        boolean split = config.agentAddress() != null;
        this.fs = new Os2gFileSystem(namespace, link, new ChunkLayout(config.agent().chunkSize()), config.fs(), metrics,
                () -> GatewayStats.document(split, metrics, backend.stats()));
        this.mount = new FuseMount(config.mountPoint(), config.fuseOptions());
    }

    /**
     * Checks what the user can get wrong (FUSE, the staging dir's room, the GPU, the store or the agent
     * answering) and mounts; returns once the mount answers.
     *
     * @throws UsageError for anything the user can fix
     */
    public static Gateway open(MountConfig config) {
        Preflight.fuseAvailable();
        return config.agentAddress() != null ? mountWithAgent(config) : mountInProcess(config);
    }

    private static Gateway mountInProcess(MountConfig config) {
        Histogram getSeconds = PrometheusMetrics.getSeconds();
        AgentStack stack;
        try {
            stack = AgentStack.forMount(config.store(), config.staging(), new AgentStack.Spec(config.prefix(), config.metadataTtl(),
                    config.agent(), config.expandTar(), config.decompress(), config.gpuDevice(),
                    config.fs().writes().newFiles() ? AgentPolicy.of(true, config.fs().writes().overwrite(), config.fs().writes().delete()) : null,
                    config.store().retry().deadline().plus(config.fs().readDeadline()), getSeconds::observe), config.cache(), config.sharedCache());
        } catch (StagingException e) {
            throw new UsageError(e.getMessage());
        }
        Gateway gateway;
        try {
            Backend backend = new Backend() {
                @Override
                public Map<String, Object> stats() {
                    return stack.stats();
                }

                @Override
                public AgentCounters counters() {
                    return stack.counters();
                }

                @Override
                public String close() {
                    stack.close();
                    return stack.summary();
                }
            };
            gateway = new Gateway(config, stack.namespace(), new InProcessLink(stack.agent(), stack.uploads(), stack.index().view()),
                    backend, new ShimMetrics(), getSeconds);
        } catch (RuntimeException e) {
            stack.close();
            throw e;
        }
        GpuRegistration gpu = stack.gpu();
        return gateway.start("staging " + Sizes.format(config.staging().capacity()) + " in " + config.staging().directory()
                + (gpu == null ? "" : ", registered with GPU " + gpu.device().ordinal() + " (" + gpu.device().deviceName() + ")"));
    }

    /** The agent checks the store and creates the staging region; its refusal is the one line. */
    private static Gateway mountWithAgent(MountConfig config) {
        // an agent on another machine stages into this host's own region: this host registers it with its GPU
        boolean hostRegion = config.agentAddress() instanceof LinkAddress.Tcp;
        int hostGpu = hostRegion ? config.gpuDevice() : -1;
        if (hostGpu >= 0) {
            CudaDevices.device(hostGpu); // no driver or no such device: refused before the link is made
        }
        AtomicReference<GpuRegistration> gpu = new AtomicReference<>();
        SocketLink link;
        try {
            link = SocketLink.connect(config.agentAddress(), config.linkTls(), config.staging().directory(),
                    hostGpu < 0 ? null : region -> {
                        GpuRegistration registration = CudaDevices.register(hostGpu, region.region());
                        gpu.set(registration);
                        return registration;
                    },
                    new MountSpec(config.bucket(), config.prefix(),
                    config.staging().capacity(), config.agent().chunkSize(), config.agent().maxReadahead(),
                    config.agent().directoryPrefetch(), config.metadataTtl() == null ? -1 : config.metadataTtl().toSeconds(),
                    config.expandTar(), config.decompress(), hostRegion ? -1 : config.gpuDevice(), config.fs().writes().newFiles()),
                    config.fs().readDeadline());
        } catch (LinkException | StagingException e) {
            throw new UsageError(e.getMessage());
        }
        return mountWithAgent(config, link, gpu);
    }

    /** Mounts with the agent process behind {@code link}: listings and fetches are the agent's; this process holds no credentials. */
    private static Gateway mountWithAgent(MountConfig config, SocketLink link, AtomicReference<GpuRegistration> hostGpu) {
        Gateway gateway;
        try {
            Namespace namespace = new Namespace(link::list, config.prefix(), config.metadataTtl()); // listings are the agent's
            Backend backend = new Backend() {
                @Override
                public Map<String, Object> stats() {
                    Map<String, Object> agent;
                    try {
                        agent = Stats.parse(link.agentStats());
                    } catch (RuntimeException e) {
                        return null; // the agent is away
                    }
                    GpuRegistration registration = hostGpu.get();
                    if (registration != null) { // this host's region, registered here
                        agent.put("gpu", CudaDevices.stats(registration));
                    }
                    return agent;
                }

                @Override
                public AgentCounters counters() {
                    return null;
                }

                @Override
                public String close() {
                    return "agent at " + config.agentAddress();
                }
            };
            gateway = new Gateway(config, namespace, link, backend, new ShimMetrics(), null);
        } catch (RuntimeException e) {
            link.close();
            throw e;
        }
        GpuRegistration registration = hostGpu.get();
        return gateway.start("agent at " + config.agentAddress() + (registration == null ? ""
                : "; staging registered with GPU " + registration.device().ordinal() + " (" + registration.device().deviceName() + ")"));
    }

    private Gateway start(String where) {
        try {
            if (config.metricsAddress() != null) {
                metricsServer = MetricsServer.serve(config.metricsAddress(), PrometheusMetrics.forMount(metrics,
                        getSeconds == null ? null : backend::counters, getSeconds));
            }
            // split mode: the agent replies to READs itself from the first one on, where it can
            mount.start(fs, device -> {
                if (link instanceof SocketLink split && config.agentReplies()) {
                    split.lendDevice(new FuseDeviceLender(device));
                }
            });
        } catch (FuseMount.MountException e) {
            close();
            throw new UsageError(e.getMessage()); // the mount point, fusermount3, the kernel's refusal: the user's to fix
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        LOG.info("mounted {}/{} at {} ({}{})", config.bucket(), config.prefix(), config.mountPoint(), where,
                metricsServer == null ? "" : "; metrics at http://" + config.metricsAddress().getHostString() + ":"
                        + metricsServer.getPort() + "/metrics");
        return this;
    }

    /** Waits until the mount goes away (fusermount -u, or the kernel's unmount). */
    public void awaitUnmount() throws InterruptedException {
        mount.awaitUnmount();
    }

    /** Idempotent; a second caller (signal hook and main thread both) waits until the first is done. */
    @Override
    public synchronized void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        mount.unmount();
        if (metricsServer != null) {
            metricsServer.close();
        }
        namespace.close();
        link.close();
        String agentSide = backend.close();
        LOG.info("unmounted {}: served {} bytes in {} reads ({} staging hits, {} misses, {} errors; {})",
                config.mountPoint(), metrics.bytesServed(), metrics.reads(), metrics.stagingHits(),
                metrics.stagingMisses(), metrics.errors(), agentSide);
    }
}
