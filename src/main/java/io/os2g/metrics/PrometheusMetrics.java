package io.os2g.metrics;

import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.instrumentation.jvm.ProcessMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * The Prometheus view of a mount's or an agent's counters ({@code --metrics-port}). Everything but the
 * GET duration histogram is read from the counters os2g keeps anyway when a scrape comes, so the read
 * path pays nothing for it. Names follow Prometheus conventions: {@code os2g_} prefix, base units,
 * {@code _total} for counters.
 */
public final class PrometheusMetrics {

    /** 1 ms to 20 s: a staged-from-a-nearby-server small file to an 8 MiB chunk over a slow link, and the deadline. */
    private static final double[] GET_SECONDS_BOUNDS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20};

    private PrometheusMetrics() {
    }

    /** The histogram of GET durations (request to last body byte) that the stores of this process observe into. */
    public static Histogram getSeconds(String... labelNames) {
        return Histogram.builder()
                .name("os2g_get_seconds")
                .help("Duration of one GET attempt to the object store, from the request to the last byte of its body staged")
                .labelNames(labelNames)
                .classicOnly()
                .classicUpperBounds(GET_SECONDS_BOUNDS)
                .build();
    }

    /**
     * A mount's registry: what its shim served; with the agent in process ({@code agent} not null), the
     * agent side too.
     */
    public static PrometheusRegistry forMount(ShimMetrics shim, Supplier<AgentCounters> agent, Histogram gets) {
        PrometheusRegistry registry = new PrometheusRegistry();
        counter(registry, "os2g_bytes_served", "Bytes returned to readers", shim::bytesServed);
        counter(registry, "os2g_bytes_spliced", "Bytes of those moved to the kernel by splice (one copy, not two)", shim::bytesSpliced);
        counter(registry, "os2g_bytes_answered_by_agent", "Bytes of those the agent wrote to the kernel itself (split mode)", shim::bytesAnsweredByAgent);
        counter(registry, "os2g_passthrough_opens", "Opens the kernel read from the disk cache's file itself (FUSE passthrough)", shim::passthroughOpens);
        counter(registry, "os2g_reads", "Read requests answered", shim::reads);
        counter(registry, "os2g_staging_hits", "Reads served from the staging region without waiting", shim::stagingHits);
        counter(registry, "os2g_staging_misses", "Reads that waited for a fetch", shim::stagingMisses);
        CounterWithCallback.builder()
                .name("os2g_errors")
                .help("File operations that failed, by the errno returned (lookups of missing names not counted)")
                .labelNames("errno")
                .callback(cb -> shim.errorsByErrno().forEach((errno, n) -> cb.call(n, errno)))
                .register(registry);
        gauge(registry, "os2g_reads_in_flight", "Read requests being answered now", shim::requestsInFlight);
        gauge(registry, "os2g_open_files", "Files open in the mount", shim::openFiles);
        counter(registry, "os2g_bytes_written", "Bytes written to files through the mount", shim::bytesWritten);
        if (agent != null) {
            agentMetrics(registry, cb -> cb.accept(agent.get(), new String[0]));
            registry.register(gets);
        }
        ProcessMetrics.builder().register(registry);
        return registry;
    }

    /**
     * An agent process's registry: one series per mount it serves, labelled {@code mount} (its staging
     * region's name) and {@code source} (BUCKET/PREFIX).
     */
    public static PrometheusRegistry forAgent(Supplier<List<ServedMount>> mounts, Histogram gets) {
        PrometheusRegistry registry = new PrometheusRegistry();
        agentMetrics(registry, each -> mounts.get().forEach(m -> each.accept(m.counters(), new String[] {m.mount(), m.source()})),
                "mount", "source");
        registry.register(gets);
        ProcessMetrics.builder().register(registry);
        return registry;
    }

    /** One mount an agent serves: its staging region's name, BUCKET/PREFIX, and its counters now. */
    public record ServedMount(String mount, String source, AgentCounters counters) {
    }

    /** Calls its argument once per (counters, label values) to expose. */
    private interface Series {
        void forEach(java.util.function.BiConsumer<AgentCounters, String[]> each);
    }

    private static void agentMetrics(PrometheusRegistry registry, Series series, String... labels) {
        agentCounter(registry, series, labels, "os2g_gets", "GET requests sent to the object store, retries included", AgentCounters::gets);
        agentCounter(registry, series, labels, "os2g_get_retries", "GET, LIST and HEAD attempts that failed transiently and were tried again", AgentCounters::retries);
        agentCounter(registry, series, labels, "os2g_fetched_bytes", "Bytes fetched from the object store into staging", AgentCounters::fetchedBytes);
        agentCounter(registry, series, labels, "os2g_failed_fetches", "Chunk fetches that failed after their retries", AgentCounters::failedFetches);
        agentCounter(registry, series, labels, "os2g_prefetched_files", "Files staged ahead of their open (directory prefetch and hints)", AgentCounters::prefetchedFiles);
        agentCounter(registry, series, labels, "os2g_prefetch_passes", "Passes through a directory begun by the directory prefetcher (each epoch over it again is one)",
                c -> c.directoryPrefetch().passes());
        agentCounter(registry, series, labels, "os2g_prefetch_sweeps", "Trees found being read through across sibling directories, staged ahead as one",
                c -> c.directoryPrefetch().sweeps());
        agentCounter(registry, series, labels, "os2g_prefetch_kept_files", "Files still staged when a new pass through their directory began, held for it with no fetch",
                c -> c.directoryPrefetch().keptStaged());
        agentCounter(registry, series, labels, "os2g_prefetched_files_opened", "Files the directory prefetcher staged ahead or kept that were then opened",
                c -> c.directoryPrefetch().stagedThenOpened());
        agentCounter(registry, series, labels, "os2g_prefetched_files_dropped", "Files the directory prefetcher staged ahead or kept and let go of unopened",
                c -> c.directoryPrefetch().droppedUnopened());
        agentCounter(registry, series, labels, "os2g_staging_evictions", "Staged chunks evicted to make room", AgentCounters::evictions);
        agentCounter(registry, series, labels, "os2g_disk_cache_hits", "Chunks read from the disk cache", AgentCounters::cacheHits);
        agentCounter(registry, series, labels, "os2g_disk_cache_misses", "Chunks looked for in the disk cache and not found whole", AgentCounters::cacheMisses);
        agentCounter(registry, series, labels, "os2g_disk_cache_read_bytes", "Bytes read from the disk cache into staging", AgentCounters::cacheBytesRead);
        agentCounter(registry, series, labels, "os2g_disk_cache_written_bytes", "Bytes written to the disk cache", AgentCounters::cacheBytesWritten);
        agentCounter(registry, series, labels, "os2g_disk_cache_evictions", "Disk cache blocks deleted by this process's sweeps", AgentCounters::cacheEvictions);
        agentCounter(registry, series, labels, "os2g_disk_cache_corrupt_blocks", "Disk cache blocks that did not verify, dropped and fetched again", AgentCounters::cacheCorrupt);
        agentCounter(registry, series, labels, "os2g_disk_cache_filled_files", "Small files fetched into the disk cache ahead of their open", AgentCounters::cacheFilledFiles);
        agentCounter(registry, series, labels, "os2g_shared_cache_hits", "Chunks read from the shared cache", c -> c.shared().hits());
        agentCounter(registry, series, labels, "os2g_shared_cache_misses", "Chunks looked for in the shared cache and not there", c -> c.shared().misses());
        agentCounter(registry, series, labels, "os2g_shared_cache_read_bytes", "Bytes read from the shared cache", c -> c.shared().bytesRead());
        agentCounter(registry, series, labels, "os2g_shared_cache_writes", "Blocks written to the shared cache behind the reads", c -> c.shared().writes());
        agentCounter(registry, series, labels, "os2g_shared_cache_written_bytes", "Bytes written to the shared cache", c -> c.shared().bytesWritten());
        agentCounter(registry, series, labels, "os2g_shared_cache_write_drops", "Blocks not written to the shared cache (writers behind, tier failing)",
                c -> c.shared().writeDrops());
        agentCounter(registry, series, labels, "os2g_shared_cache_bad_blocks", "Shared cache blocks that did not verify, read from the origin instead",
                c -> c.shared().badBlocks());
        agentCounter(registry, series, labels, "os2g_shared_cache_errors", "Shared cache requests that failed, each bypassing the tier for a while",
                c -> c.shared().errors());
        agentCounter(registry, series, labels, "os2g_shared_cache_awaited_fills", "Shared cache misses another node was filling, waited for",
                c -> c.shared().awaitedFills());
        agentCounter(registry, series, labels, "os2g_shared_cache_awaited_fill_hits", "Awaited fills whose block arrived in time (an origin GET saved)",
                c -> c.shared().awaitedFillHits());
        agentGauge(registry, series, labels, "os2g_gets_in_flight", "GET requests in flight now", AgentCounters::getsInFlight);
        agentGauge(registry, series, labels, "os2g_staging_capacity_bytes", "Size of the staging region", AgentCounters::stagingCapacityBytes);
        agentGauge(registry, series, labels, "os2g_staging_used_bytes", "Staging bytes holding staged or in-flight chunks",
                c -> c.stagingCapacityBytes() - c.stagingFreeBytes());
        agentGauge(registry, series, labels, "os2g_staging_in_flight_bytes", "Staging bytes reserved by fetches in flight", AgentCounters::stagingInFlightBytes);
        agentGauge(registry, series, labels, "os2g_staged_chunks", "Chunks staged and readable now", AgentCounters::stagedChunks);
        agentCounter(registry, series, labels, "os2g_uploaded_bytes", "Bytes of files written through the mount uploaded to the object store",
                c -> c.uploads().bytes());
        agentCounter(registry, series, labels, "os2g_uploaded_parts", "Parts of multipart uploads sent", c -> c.uploads().parts());
        agentCounter(registry, series, labels, "os2g_published_files", "Files written through the mount and published at close",
                c -> c.uploads().filesPublished());
        agentCounter(registry, series, labels, "os2g_aborted_uploads", "Files being written that were dropped (a failed part, a killed writer)",
                c -> c.uploads().aborted());
        agentGauge(registry, series, labels, "os2g_files_writing", "Files being written now", c -> c.uploads().filesWriting());
        agentGauge(registry, series, labels, "os2g_staging_upload_bytes", "Staging bytes holding parts not yet uploaded",
                c -> c.uploads().stagedBytes());
    }

    private static void agentCounter(PrometheusRegistry registry, Series series, String[] labels, String name, String help,
                                     ToLongFunction<AgentCounters> value) {
        CounterWithCallback.builder().name(name).help(help).labelNames(labels)
                .callback(cb -> series.forEach((c, labelValues) -> cb.call(value.applyAsLong(c), labelValues)))
                .register(registry);
    }

    private static void agentGauge(PrometheusRegistry registry, Series series, String[] labels, String name, String help,
                                   ToLongFunction<AgentCounters> value) {
        GaugeWithCallback.builder().name(name).help(help).labelNames(labels)
                .callback(cb -> series.forEach((c, labelValues) -> cb.call(value.applyAsLong(c), labelValues)))
                .register(registry);
    }

    private static void counter(PrometheusRegistry registry, String name, String help, Supplier<Long> value) {
        CounterWithCallback.builder().name(name).help(help).callback(cb -> cb.call(value.get())).register(registry);
    }

    private static void gauge(PrometheusRegistry registry, String name, String help, Supplier<Long> value) {
        GaugeWithCallback.builder().name(name).help(help).callback(cb -> cb.call(value.get())).register(registry);
    }
}
