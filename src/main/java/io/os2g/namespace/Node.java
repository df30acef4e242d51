package io.os2g.namespace;

/** A file or a directory of the mount. */
public sealed interface Node permits Node.Dir, Node.File {

    /** The inode number; stable for a key for the life of the mount. */
    long inode();

    /**
     * A directory: the prefix it lists ({@code ""} for the bucket root, otherwise ending in {@code /}).
     */
    record Dir(long inode, String prefix) implements Node {
    }

    /** A regular file: one object version, as the listing reported it. */
    record File(long inode, String key, long size, String etag, long mtimeMillis) implements Node {
    }
}
