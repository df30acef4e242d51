package io.os2g.runtime;

import io.os2g.agent.Agent;
import io.os2g.agent.AgentConfig;
import io.os2g.agent.AgentPolicy;
import io.os2g.agent.DecompressedStore;
import io.os2g.agent.TarExpandingStore;
import io.os2g.agent.Uploads;
import io.os2g.diskcache.CacheConfig;
import io.os2g.diskcache.DiskCache;
import io.os2g.sharedcache.SharedCache;
import io.os2g.sharedcache.SharedCacheConfig;
import io.os2g.link.AgentSession;
import io.os2g.metrics.AgentCounters;
import io.os2g.namespace.Namespace;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.GpuRegistration;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingRegion;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.ObjectStore;
import io.os2g.store.StoreConfig;
import java.time.Duration;
import java.util.Map;
import java.util.function.DoubleConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One agent side, the same for a mount with the agent in process and for each shim an agent process
 * serves: the store client and its views (tar members, decompression), the staging region (registered
 * with a GPU where asked), the namespace, the agent and its uploads. Built in one order and closed in
 * the reverse, so nothing writes into the region after it is unmapped.
 */
final class AgentStack implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(AgentStack.class);

    /**
     * What one agent side serves.
     *
     * @param metadataTtl how long listings are kept; null for as long as the mount lives
     * @param gpuDevice the CUDA device the region is registered with; -1 for none
     * @param writes what written files may do; null for a mount that takes no writes
     * @param uploadDeadline how long a part upload may wait for room or a retry
     * @param getSeconds where each GET's duration goes
     */
    record Spec(String prefix, Duration metadataTtl, AgentConfig agent, boolean expandTar, boolean decompress,
                int gpuDevice, AgentPolicy writes, Duration uploadDeadline, DoubleConsumer getSeconds) {
    }

    private final MinioObjectStore store;
    private final TarExpandingStore tars;
    private final DecompressedStore decompressed;
    private final ObjectStore objects;
    private final DiskCache disk;
    private final boolean ownsDisk;
    private final SharedCache shared;
    private final boolean ownsShared;
    private final StagingRegion region;
    private final GpuRegistration gpu;
    private final ExtentIndex index;
    private final Namespace namespace;
    private final Agent agent;
    private final Uploads uploads;

    private AgentStack(MinioObjectStore store, DiskCache disk, boolean ownsDisk, SharedCache shared, boolean ownsShared,
                       StagingRegion region, GpuRegistration gpu, Spec spec, AgentSession.Posting posting) {
        this.store = store;
        this.disk = disk;
        this.ownsDisk = ownsDisk;
        this.shared = shared;
        this.ownsShared = ownsShared;
        this.region = region;
        this.gpu = gpu;
        this.index = posting == null ? new ExtentIndex(region, spec.agent().chunkSize())
                : new ExtentIndex(region, spec.agent().chunkSize(), posting.mirror(), posting.held());
        this.tars = spec.expandTar() ? new TarExpandingStore(store) : null;
        this.decompressed = spec.decompress() ? new DecompressedStore(tars != null ? tars : store) : null;
        this.objects = decompressed != null ? decompressed : tars != null ? tars : store;
        this.namespace = new Namespace(objects, spec.prefix(), spec.metadataTtl());
        this.agent = new Agent(objects, index, spec.agent(), namespace, disk, shared, store.endpoint() + " " + store.bucket());
        this.uploads = spec.writes() == null ? null : new Uploads(store, index, spec.uploadDeadline(), spec.prefix(), spec.writes());
        store.observeGets(spec.getSeconds());
    }

    /**
     * A mount's agent side with a disk cache and a shared tier of its own (null for none), opened once
     * the store answers.
     */
    static AgentStack forMount(StoreConfig storeConfig, StagingConfig staging, Spec spec, CacheConfig cache,
                               SharedCacheConfig sharedCache) {
        return open(storeConfig, staging, spec, cache, null, sharedCache, null, null);
    }

    /**
     * An agent process's side for one shim, over the disk cache the process shares between its shims
     * (null for none); {@code posting} where the shim is on another machine (its region is posted to), else null.
     */
    static AgentStack forSession(StoreConfig storeConfig, StagingConfig staging, Spec spec, DiskCache shared,
                                 SharedCache sharedTier, AgentSession.Posting posting) {
        return open(storeConfig, staging, spec, null, shared, null, sharedTier, posting);
    }

    /**
     * Checks that the region fits and the store answers, then builds.
     *
     * @throws UsageError what the user can fix (no room, the store refusing)
     */
    private static AgentStack open(StoreConfig storeConfig, StagingConfig staging, Spec spec, CacheConfig ownCache,
                                   DiskCache shared, SharedCacheConfig ownTier, SharedCache sharedTier,
                                   AgentSession.Posting posting) {
        Preflight.stagingFits(staging);
        if (spec.gpuDevice() >= 0) {
            CudaDevices.device(spec.gpuDevice()); // no driver or no such device: refused before anything is set up
        }
        MinioObjectStore store = Preflight.openStore(storeConfig);
        DiskCache own = null;
        SharedCache tier = null;
        StagingRegion region = null;
        GpuRegistration gpu = null;
        try {
            Preflight.storeAnswers(store, store.endpoint(), spec.prefix());
            store.warmUp();
            own = ownCache == null ? null : Preflight.openCache(ownCache);
            tier = SharedCacheSettings.open(ownTier);
            region = StagingRegion.create(staging);
            gpu = spec.gpuDevice() < 0 ? null : CudaDevices.register(spec.gpuDevice(), region);
            return new AgentStack(store, own != null ? own : shared, own != null, tier != null ? tier : sharedTier, tier != null,
                    region, gpu, spec, posting);
        } catch (RuntimeException e) {
            if (gpu != null) {
                gpu.close();
            }
            if (region != null) {
                region.close();
            }
            if (own != null) {
                own.close();
            }
            if (tier != null) {
                tier.close();
            }
            store.close();
            throw e;
        }
    }

    Agent agent() {
        return agent;
    }

    /** Null for a mount that takes no writes. */
    Uploads uploads() {
        return uploads;
    }

    ExtentIndex index() {
        return index;
    }

    Namespace namespace() {
        return namespace;
    }

    StagingRegion region() {
        return region;
    }

    /** Null where the region is registered with no GPU. */
    GpuRegistration gpu() {
        return gpu;
    }

    /** The agent's part of {@code /.os2g/stats}. */
    Map<String, Object> stats() {
        Map<String, Object> stats = GatewayStats.agent(store, tars, decompressed, agent, index, uploads);
        if (gpu != null) {
            stats.put("gpu", CudaDevices.stats(gpu));
        }
        return stats;
    }

    /** The same counters for the Prometheus exposition. */
    AgentCounters counters() {
        return GatewayStats.counters(store, agent, index, uploads);
    }

    /** One line for the unmount log. */
    String summary() {
        return store.getCount() + " GETs, " + store.retryCount() + " retries, " + agent.prefetchedFiles() + " files prefetched";
    }

    /**
     * Aborts what is still being written, stops fetching, closes the store views, writes out what the
     * disk cache admitted (its writer copies from staging), then frees the GPU registration and the region.
     */
    @Override
    public void close() {
        if (uploads != null) {
            uploads.close(); // files still being written are aborted: none was closed
        }
        agent.close();
        namespace.close();
        objects.close(); // the decompressing view's decoders, then the store
        if (ownsDisk) {
            disk.close(); // what is admitted is written first (a few seconds at most)
        }
        if (ownsShared) {
            shared.close(); // the blocks queued are written first (a few seconds at most)
        }
        // what readers and fetches still hold once nothing can run: anything but 0 is a leak
        int pinned = index.pinnedChunks();
        long inFlight = index.inFlightBytes();
        (pinned == 0 && inFlight == 0 ? LOG.atInfo() : LOG.atWarn()).log("staging at unmount: {} chunks staged, {} pinned, {} bytes in flight",
                index.stagedChunks(), pinned, inFlight);
        if (gpu != null) {
            gpu.close();
        }
        region.close();
    }
}
