package io.os2g.cli;

import io.os2g.agent.Agent;
import io.os2g.host.FuseMount;
import io.os2g.host.Os2gFileSystem;
import io.os2g.link.AgentLink;
import io.os2g.link.InProcessLink;
import io.os2g.metrics.ReadMetrics;
import io.os2g.namespace.Namespace;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagingRegion;
import io.os2g.store.MinioObjectStore;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running mount with the agent in process: the composition root. Closing it unmounts, stops the
 * fetches and removes the staging directory, whichever way the mount ends (signal, fusermount -u,
 * error), exactly once.
 */
final class Gateway implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Gateway.class);

    private final MountConfig config;
    private final MinioObjectStore store;
    private final StagingRegion region;
    private final ExtentIndex index;
    private final Agent agent;
    private final AgentLink link;
    private final ReadMetrics metrics = new ReadMetrics();
    private final Namespace namespace;
    private final Os2gFileSystem fs;
    private final FuseMount mount;
    private final AtomicBoolean closed = new AtomicBoolean();

    private Gateway(MountConfig config, MinioObjectStore store) {
        this.config = config;
        this.store = store;
        this.region = StagingRegion.create(config.staging());
        try {
            this.index = new ExtentIndex(region, config.agent().chunkSize());
            this.namespace = new Namespace(store, config.prefix(), config.metadataTtl());
            this.agent = new Agent(store, index, config.agent(), namespace);
            this.link = new InProcessLink(agent);
            this.fs = new Os2gFileSystem(namespace, index.view(), link,
                    new ChunkLayout(config.agent().chunkSize()), config.fs(), metrics, FuseMount.errnos());
            this.mount = new FuseMount(config.mountPoint(), config.fuseOptions());
        } catch (RuntimeException e) {
            region.close();
            throw e;
        }
    }

    /** Mounts; returns once the mount answers. The store has passed its preflight probe. */
    static Gateway mount(MountConfig config, MinioObjectStore store) {
        Gateway gateway = new Gateway(config, store);
        try {
            gateway.mount.start(gateway.fs);
        } catch (RuntimeException e) {
            gateway.close();
            throw e;
        }
        LOG.info("mounted {}/{} at {} (staging {} in {})", store.bucket(), config.prefix(), config.mountPoint(),
                Sizes.format(config.staging().capacity()), config.staging().directory());
        return gateway;
    }

    void awaitUnmount() throws InterruptedException {
        mount.awaitUnmount();
    }

    ReadMetrics metrics() {
        return metrics;
    }

    MinioObjectStore store() {
        return store;
    }

    ExtentIndex index() {
        return index;
    }

    Agent agent() {
        return agent;
    }

    /** Idempotent; a second caller (signal hook and main thread both) waits until the first is done. */
    @Override
    public synchronized void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        mount.unmount();
        namespace.close();
        link.close();
        store.close();
        // what readers and fetches still hold once nothing can run: anything but 0 is a leak
        int pinned = index.pinnedChunks();
        long inFlight = index.inFlightBytes();
        (pinned == 0 && inFlight == 0 ? LOG.atInfo() : LOG.atWarn()).log(
                "staging at unmount: {} chunks staged, {} pinned, {} bytes in flight", index.stagedChunks(), pinned, inFlight);
        region.close();
        LOG.info("unmounted {}: served {} bytes in {} reads ({} staging hits, {} misses, {} GETs, {} retries, {} errors, {} files prefetched)",
                config.mountPoint(), metrics.bytesServed(), metrics.reads(), metrics.stagingHits(),
                metrics.stagingMisses(), store.getCount(), store.retryCount(), metrics.errors(), agent.prefetchedFiles());
    }
}
