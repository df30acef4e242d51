package io.os2g.runtime;

import io.os2g.agent.Agent;
import io.os2g.agent.DecompressedStore;
import io.os2g.agent.TarExpandingStore;
import io.os2g.agent.Uploads;
import io.os2g.diskcache.DiskCache;
import io.os2g.sharedcache.SharedCache;
import io.os2g.metrics.AgentCounters;
import io.os2g.metrics.ShimMetrics;
import io.os2g.metrics.Stats;
import io.os2g.staging.ExtentIndex;
import io.os2g.store.MinioObjectStore;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The {@code /.os2g/stats} document. Counters only: no endpoint credentials, no keys. The shim's and
 * the agent's CPU are apart in split mode; with the agent in process they are one process's.
 */
final class GatewayStats {

    private GatewayStats() {
    }

    /** The agent's part of the document: its store's requests, its fetches and prefetching, its staging region. */
    static Map<String, Object> agent(MinioObjectStore store, TarExpandingStore tars, DecompressedStore decompressed,
                                     Agent agent, ExtentIndex index, Uploads uploads) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("gets", store.getCount());
        m.put("retries", store.retryCount());
        m.put("fetched_bytes", agent.fetchedBytes());
        m.put("failed_fetches", agent.failedFetches());
        m.put("prefetched_files", agent.prefetchedFiles());
        m.put("directory_prefetch", agent.directoryPrefetchCounters());
        m.put("prefetch", agent.hintCounters());
        m.put("warm", agent.warmCounters());
        m.put("staging", staging(index));
        if (agent.diskCache() != null) {
            m.put("disk_cache", diskCache(agent));
        }
        if (agent.sharedCache() != null) {
            m.put("shared_cache", sharedCache(agent));
        }
        if (uploads != null) {
            m.put("uploads", uploads(uploads, index));
        }
        if (tars != null) {
            m.put("tar", tars.stats());
        }
        if (decompressed != null) {
            m.put("decompress", decompressed.stats());
        }
        return m;
    }

    /** The same counters for the Prometheus exposition. */
    static AgentCounters counters(MinioObjectStore store, Agent agent, ExtentIndex index, Uploads uploads) {
        DiskCache.Counters disk = agent.diskCache() == null ? new DiskCache.Counters(0, 0, 0, 0, 0, 0, 0, 0)
                : agent.diskCache().counters();
        return new AgentCounters(store.getCount(), store.getsInFlight(), store.retryCount(), agent.fetchedBytes(),
                agent.failedFetches(), agent.prefetchedFiles(), index.capacityBytes(), index.freeBytes(),
                index.inFlightBytes(), index.stagedChunks(), index.evictions(), disk.hits(), disk.misses(), disk.bytesRead(),
                disk.bytesWritten(), disk.evictions(), disk.corrupt(), agent.filledFiles(), directoryPrefetch(agent), sharedTier(agent),
                uploads == null ? AgentCounters.Uploads.NONE : new AgentCounters.Uploads(uploads.bytesUploaded(),
                        uploads.partsUploaded(), uploads.filesPublished(), uploads.uploadsAborted(), uploads.active(), index.uploadBytes()));
    }

    private static AgentCounters.DirectoryPrefetch directoryPrefetch(Agent agent) {
        Map<String, Long> c = agent.directoryPrefetchCounters();
        return new AgentCounters.DirectoryPrefetch(c.get("passes"), c.get("sweeps"), c.get("files_staged"), c.get("kept_staged"),
                c.get("staged_then_opened"), c.get("dropped_unopened"));
    }

    private static AgentCounters.SharedTier sharedTier(Agent agent) {
        if (agent.sharedCache() == null) {
            return AgentCounters.SharedTier.NONE;
        }
        SharedCache.Counters c = agent.sharedCache().counters();
        return new AgentCounters.SharedTier(c.hits(), c.misses(), c.bytesRead(), c.writes(), c.bytesWritten(), c.writeDrops(),
                c.badBlocks(), c.errors(), c.awaitedFills(), c.awaitedFillHits());
    }

    private static Map<String, Object> sharedCache(Agent agent) {
        SharedCache.Counters c = agent.sharedCache().counters();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("hits", c.hits());
        m.put("misses", c.misses());
        m.put("bytes_read", c.bytesRead());
        m.put("writes", c.writes());
        m.put("bytes_written", c.bytesWritten());
        m.put("write_drops", c.writeDrops());
        m.put("bad_blocks", c.badBlocks());
        m.put("errors", c.errors());
        m.put("awaited_fills", c.awaitedFills());
        m.put("awaited_fill_hits", c.awaitedFillHits());
        m.put("bypassed", c.bypassed());
        return m;
    }

    private static Map<String, Object> diskCache(Agent agent) {
        DiskCache.Counters c = agent.diskCache().counters();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("hits", c.hits());
        m.put("misses", c.misses());
        m.put("bytes_read", c.bytesRead());
        m.put("bytes_written", c.bytesWritten());
        m.put("evictions", c.evictions());
        m.put("corrupt", c.corrupt());
        m.put("write_errors", c.writeErrors());
        m.put("not_admitted", c.notAdmitted());
        m.put("chunks_from_disk", agent.chunksFromDisk());
        m.put("files_filled", agent.filledFiles());
        return m;
    }

    private static Map<String, Object> uploads(Uploads uploads, ExtentIndex index) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("files_writing", uploads.active());
        m.put("files_published", uploads.filesPublished());
        m.put("bytes_uploaded", uploads.bytesUploaded());
        m.put("parts_uploaded", uploads.partsUploaded());
        m.put("aborted", uploads.uploadsAborted());
        m.put("staged_bytes", index.uploadBytes());
        return m;
    }

    private static Map<String, Object> staging(ExtentIndex index) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("capacity_bytes", index.capacityBytes());
        m.put("page_bytes", index.pageSize());
        m.put("free_bytes", index.freeBytes());
        m.put("staged_chunks", index.stagedChunks());
        m.put("pinned_chunks", index.pinnedChunks());
        m.put("in_flight_bytes", index.inFlightBytes());
        m.put("evictions", index.evictions());
        return m;
    }

    /**
     * @param split whether the agent is another process
     * @param agent the agent's part ({@code cpu_seconds} among it), or null when it cannot be asked now
     */
    static String document(boolean split, ShimMetrics metrics, Map<String, Object> agent) {
        double cpu = Stats.processCpuSeconds();
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("mode", split ? "split" : "in-process");
        doc.put("bytes_served", metrics.bytesServed());
        doc.put("bytes_spliced", metrics.bytesSpliced());
        doc.put("bytes_answered_by_agent", metrics.bytesAnsweredByAgent());
        doc.put("passthrough_opens", metrics.passthroughOpens());
        doc.put("reads", metrics.reads());
        doc.put("open_files", metrics.openFiles());
        doc.put("staging_hits", metrics.stagingHits());
        doc.put("staging_misses", metrics.stagingMisses());
        doc.put("errors", metrics.errors());
        doc.put("errors_by_errno", metrics.errorsByErrno());
        doc.put("hint_lines", Map.of("accepted", metrics.hintsAccepted(), "rejected", metrics.hintsRejected()));
        Map<String, Object> writes = new LinkedHashMap<>();
        writes.put("files_writing", metrics.filesWriting());
        writes.put("bytes_written", metrics.bytesWritten());
        writes.put("files_published", metrics.filesPublished());
        writes.put("bytes_published", metrics.bytesPublished());
        writes.put("aborted", metrics.writesAborted());
        doc.put("writes", writes);
        Map<String, Object> process = new LinkedHashMap<>();
        process.put("cpu_seconds", cpu);
        process.put("cpu_seconds_per_gib", Stats.perGib(cpu, metrics.bytesServed()));
        doc.put(split ? "shim" : "process", process);
        if (agent != null && split && agent.get("cpu_seconds") instanceof Number agentCpu) {
            agent.put("cpu_seconds_per_gib", Stats.perGib(agentCpu.doubleValue(), metrics.bytesServed()));
        }
        doc.put("agent", agent == null ? Map.of("connected", false) : agent);
        return Stats.json(doc);
    }
}
