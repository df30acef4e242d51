package io.os2g.staging;

/**
 * A staged chunk a reader holds pinned: while pinned, its pages are not freed or reused. Obtained
 * from {@link StagingView#acquire}, given back with {@link StagingView#release}, exactly once.
 *
 * @param slot its slot in the extent table
 * @param length its length in bytes
 */
public record StagedChunk(int slot, int length) {
}
