package io.os2g.link;

/**
 * Where the agent put a mount's staging region and its shape, so the shim can map it; {@code pagesInPlace}:
 * the region overwrites reused pages where they are (registered with a GPU), so the shim must copy, not splice.
 */
public record StagingLayout(String directory, long capacity, int pageSize, long segmentSize, boolean pagesInPlace) {
}
