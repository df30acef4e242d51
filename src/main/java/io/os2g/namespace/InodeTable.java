package io.os2g.namespace;

/**
 * Inode numbers by key: a 64-bit hash of the key, so a key has the same number in every process that
 * lists it, for as long as it exists. The shim and an agent in another process therefore name a
 * file's staged chunks alike without telling each other, and a file reopened after its directory
 * expired from the cache is the same inode to the staging index. Directories are keyed by their
 * prefix (ending in {@code /}), files by their key, so {@code a} and {@code a/} get different
 * numbers. Two keys that collide could only share staged bytes if their ETags hash alike too.
 */
public final class InodeTable {

    /** FUSE reserves 1 for the root. */
    public static final long ROOT = 1;

    public long inodeOf(String keyOrPrefix) {
        long h = 0xcbf2_9ce4_8422_2325L;
        for (int i = 0; i < keyOrPrefix.length(); i++) {
            h = (h ^ keyOrPrefix.charAt(i)) * 0x0100_0000_01b3L;
        }
        h ^= h >>> 33; // FNV's low bits mix poorly: fold the high ones in
        return h == 0 || h == ROOT ? h + 2 : h;
    }
}
