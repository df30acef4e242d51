package io.os2g.metrics;

/**
 * What the agent side of one mount has counted, read at one moment: its store's GETs, its fetches and
 * prefetching, its staging region's occupancy, its disk cache's and shared tier's traffic (zeros without
 * them), and its uploads.
 */
public record AgentCounters(long gets, long getsInFlight, long retries, long fetchedBytes, long failedFetches,
                            long prefetchedFiles, long stagingCapacityBytes, long stagingFreeBytes,
                            long stagingInFlightBytes, long stagedChunks, long evictions, long cacheHits, long cacheMisses,
                            long cacheBytesRead, long cacheBytesWritten, long cacheEvictions, long cacheCorrupt,
                            long cacheFilledFiles, DirectoryPrefetch directoryPrefetch, SharedTier shared, Uploads uploads) {

    /**
     * The directory prefetcher's passes through directories, sweeps of trees, the files it staged ahead
     * and those it kept staged for a new pass, and what became of them.
     */
    public record DirectoryPrefetch(long passes, long sweeps, long filesStaged, long keptStaged, long stagedThenOpened,
                                    long droppedUnopened) {
        public static final DirectoryPrefetch NONE = new DirectoryPrefetch(0, 0, 0, 0, 0, 0);
    }

    /**
     * The shared tier's traffic: blocks read, missed, written behind the reads, dropped, and found bad;
     * its failures; misses another node was filling, and those its block then served.
     */
    public record SharedTier(long hits, long misses, long bytesRead, long writes, long bytesWritten, long writeDrops, long badBlocks,
                             long errors, long awaitedFills, long awaitedFillHits) {
        public static final SharedTier NONE = new SharedTier(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    /** What the agent uploaded for files written through the mount (zeros for a mount that writes nothing). */
    public record Uploads(long bytes, long parts, long filesPublished, long aborted, long filesWriting, long stagedBytes) {
        public static final Uploads NONE = new Uploads(0, 0, 0, 0, 0, 0);
    }
}
