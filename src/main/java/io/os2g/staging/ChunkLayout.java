package io.os2g.staging;

/**
 * How an object is cut into chunks: the unit of fetching and of the extent index. Chunk {@code i} of
 * an object covers {@code [i * chunkSize, min(size, (i + 1) * chunkSize))}.
 */
public record ChunkLayout(long chunkSize) {

    public ChunkLayout {
        if (chunkSize <= 0 || Long.bitCount(chunkSize) != 1) {
            throw new IllegalArgumentException("chunk size must be a power of two: chunkSize=" + chunkSize);
        }
    }

    public long index(long offset) {
        return offset / chunkSize;
    }

    public long start(long index) {
        return index * chunkSize;
    }

    /** Bytes in chunk {@code index} of an object of {@code objectSize} bytes (0 past the end). */
    public int length(long objectSize, long index) {
        return (int) Math.max(0, Math.min(chunkSize, objectSize - index * chunkSize));
    }

    /** Number of chunks of an object; an empty object has none. */
    public long count(long objectSize) {
        return (objectSize + chunkSize - 1) / chunkSize;
    }
}
