package io.os2g.host;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.cryptomator.jfuse.api.FileInfo;

/**
 * The hidden control directory {@code /.os2g/} (not listed in the root; a bucket key under
 * {@code .os2g/} is shadowed by it). {@code /.os2g/stats} reads as a JSON snapshot of the mount's
 * counters, taken at open. It is opened {@code direct_io}, so every open reads a fresh snapshot of
 * whatever length, and the page cache never holds a stale one.
 */
final class ControlFiles {

    static final String DIR = "/.os2g";
    static final String STATS = DIR + "/stats";

    private final Supplier<String> stats;
    private final ConcurrentHashMap<Long, byte[]> snapshots = new ConcurrentHashMap<>();

    ControlFiles(Supplier<String> stats) {
        this.stats = stats;
    }

    static boolean owns(String path) {
        return path.equals(DIR) || path.startsWith(DIR + "/");
    }

    static boolean isDirectory(String path) {
        return path.equals(DIR);
    }

    static boolean isFile(String path) {
        return path.equals(STATS);
    }

    /** Size getattr reports: 0 when reads are direct (the kernel then asks regardless), else a fresh snapshot's. */
    long size() {
        return FileInfoFlags.supported() ? 0 : snapshot().length;
    }

    void open(long fh, FileInfo fi) {
        snapshots.put(fh, snapshot());
        FileInfoFlags.setDirectIo(fi); // without it, the snapshot is read as far as getattr's size allows
    }

    /** Bytes of the open snapshot from {@code offset}, at most {@code size}. */
    byte[] read(long fh, long offset, long size) {
        byte[] snapshot = snapshots.getOrDefault(fh, new byte[0]);
        int from = (int) Math.min(offset, snapshot.length);
        int to = (int) Math.min(snapshot.length, from + size);
        return java.util.Arrays.copyOfRange(snapshot, from, to);
    }

    boolean release(long fh) {
        return snapshots.remove(fh) != null;
    }

    boolean isOpen(long fh) {
        return snapshots.containsKey(fh);
    }

    private byte[] snapshot() {
        return stats.get().getBytes(StandardCharsets.UTF_8);
    }
}
