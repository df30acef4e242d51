package io.os2g.link;

/** Where the agent put a mount's staging region and its shape, so the shim can map it. */
public record StagingRegionSpec(String directory, long capacity, int pageSize, long segmentSize) {
}
