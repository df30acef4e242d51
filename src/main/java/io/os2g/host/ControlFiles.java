package io.os2g.host;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Method;
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

    /** {@code struct fuse_file_info} (libfuse 3, x86_64): the bit-field word after {@code flags}; direct_io is bit 1. */
    private static final long BITS = 4;
    private static final int DIRECT_IO = 1 << 1;
    private static final long FILE_INFO_SIZE = 40;
    private static final MethodHandle SEGMENT = segmentAccessor();

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
        return SEGMENT != null ? 0 : snapshot().length;
    }

    void open(long fh, FileInfo fi) {
        snapshots.put(fh, snapshot());
        setDirectIo(fi);
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

    private static MethodHandle segmentAccessor() {
        if (!"amd64".equals(System.getProperty("os.arch")) || !"Linux".equals(System.getProperty("os.name"))) {
            return null;
        }
        try {
            Method m = Class.forName("org.cryptomator.jfuse.linux.amd64.FileInfoImpl").getDeclaredMethod("segment");
            m.setAccessible(true);
            return MethodHandles.lookup().unreflect(m);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static void setDirectIo(FileInfo fi) {
        if (SEGMENT == null) {
            return;
        }
        try {
            MemorySegment segment = ((MemorySegment) SEGMENT.invoke(fi)).reinterpret(FILE_INFO_SIZE);
            segment.set(ValueLayout.JAVA_INT, BITS, segment.get(ValueLayout.JAVA_INT, BITS) | DIRECT_IO);
        } catch (Throwable t) {
            // without direct_io the snapshot is read as far as getattr's size allows
        }
    }
}
