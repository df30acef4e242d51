package io.os2g.metrics;

/**
 * What the agent side of one mount has counted, read at one moment: its store's GETs, its fetches and
 * prefetching, its staging region's occupancy, and its disk cache's traffic (zeros without one).
 */
public record AgentCounters(long gets, long getsInFlight, long retries, long fetchedBytes, long failedFetches,
                            long prefetchedFiles, long stagingCapacityBytes, long stagingFreeBytes,
                            long stagingInFlightBytes, long stagedChunks, long evictions, long cacheHits, long cacheMisses,
                            long cacheBytesRead, long cacheBytesWritten, long cacheEvictions, long cacheCorrupt,
                            long cacheFilledFiles) {
}
