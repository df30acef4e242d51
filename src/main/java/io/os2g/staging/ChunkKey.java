package io.os2g.staging;

/** Address of a chunk in the extent index: the file's inode and the chunk's index in it. */
public record ChunkKey(long inode, long index) {
}
