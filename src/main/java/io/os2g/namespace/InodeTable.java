package io.os2g.namespace;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Inode numbers by key. A key keeps its number for the life of the mount, so a file reopened after
 * its directory expired from the cache is the same inode to the kernel and to the staging index.
 * Directories are keyed by their prefix (ending in {@code /}), files by their key, so {@code a} and
 * {@code a/} never share a number.
 */
public final class InodeTable {

    /** FUSE reserves 1 for the root. */
    public static final long ROOT = 1;

    private final ConcurrentHashMap<String, Long> inodes = new ConcurrentHashMap<>();
    private final AtomicLong next = new AtomicLong(ROOT + 1);

    public long inodeOf(String keyOrPrefix) {
        return inodes.computeIfAbsent(keyOrPrefix, k -> next.getAndIncrement());
    }

    public int size() {
        return inodes.size();
    }
}
