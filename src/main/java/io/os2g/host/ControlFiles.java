package io.os2g.host;

import io.os2g.Errno;
import io.os2g.link.AgentLink;
import io.os2g.metrics.ShimMetrics;
import io.os2g.namespace.Namespace;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The hidden control directory {@code /.os2g/} (not listed in the root; a bucket key under
 * {@code .os2g/} is shadowed by it):
 * <ul>
 * <li>{@code stats} reads as a JSON snapshot of the mount's counters, taken at open. It is opened
 *     {@code direct_io}, so every open reads a fresh snapshot of whatever length, and the page cache
 *     never holds a stale one.
 * <li>{@code prefetch} takes paths, one per line, in the order readers will open them; the agent
 *     stages them a bounded window ahead of the readers ({@link HintWriter}).
 * <li>{@code warm} takes paths the same way; the agent stages all of them ({@code os2g warm}).
 * <li>{@code extents} (read-write, the mount owner's) takes paths and answers, from offset 0, where
 *     each file's staged bytes lie, leased until it is closed ({@link ExtentsControlFile}).
 * </ul>
 * Opening {@code prefetch} or {@code warm} with O_TRUNC (a shell's {@code >}, Python's {@code "w"})
 * replaces the paths not yet staged; without it ({@code >>}, {@code "a"}) they are added at the end.
 */
final class ControlFiles {

    static final String DIR = "/.os2g";
    static final String STATS = DIR + "/stats";
    static final String PREFETCH = DIR + "/prefetch";
    static final String WARM = DIR + "/warm";
    static final String EXTENTS = DIR + "/extents";
    static final List<String> NAMES = List.of("stats", "prefetch", "warm", "extents");
    private static final int O_ACCMODE = 3;
    private static final int O_RDWR = 2;

    private static final int O_TRUNC = 0x200;

    private final Supplier<String> stats;
    private final Namespace namespace;
    private final AgentLink link;
    private final ShimMetrics metrics;
    private final String mountPoint;
    private final ConcurrentHashMap<Long, byte[]> snapshots = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, HintWriter> writers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, ExtentsControlFile> queries = new ConcurrentHashMap<>();
    private final StagedReader reader;

    ControlFiles(Supplier<String> stats, Namespace namespace, AgentLink link, ShimMetrics metrics, String mountPoint,
                 StagedReader reader) {
        this.stats = stats;
        this.reader = reader;
        this.namespace = namespace;
        this.link = link;
        this.metrics = metrics;
        this.mountPoint = mountPoint;
    }

    static boolean owns(String path) {
        return path.equals(DIR) || path.startsWith(DIR + "/");
    }

    static boolean isDirectory(String path) {
        return path.equals(DIR);
    }

    static boolean isFile(String path) {
        return path.equals(STATS) || path.equals(EXTENTS) || isWritable(path);
    }

    /** Permission bits: anyone may hint; the extents query is the owner's (only the owner can map the segments). */
    static int mode(String path) {
        return path.equals(EXTENTS) ? 0600 : isWritable(path) ? 0222 : 0444;
    }

    /** The files that take paths (mode 0222: any user of the mount may hint). */
    static boolean isWritable(String path) {
        return path.equals(PREFETCH) || path.equals(WARM);
    }

    /** Size getattr reports: 0, as reads are direct (the kernel then asks regardless). */
    long size(String path) {
        return 0;
    }

    /** Opens a control file; returns 0 or a negated errno. */
    int open(String path, long fh, int flags, boolean forWriting) {
        if (path.equals(EXTENTS)) {
            if ((flags & O_ACCMODE) != O_RDWR) {
                return -Errno.EACCES; // paths go in, answers come out: O_RDWR
            }
            queries.put(fh, new ExtentsControlFile(namespace, link, reader, mountPoint));
            return 0;
        }
        if (isWritable(path)) {
            if (!forWriting) {
                return -Errno.EACCES;
            }
            boolean replace = (flags & O_TRUNC) != 0;
            writers.put(fh, new HintWriter(namespace, link, metrics, mountPoint, path.equals(WARM), replace));
            return 0; // opened direct_io: every write reaches the writer at once, not after the page cache
        }
        if (forWriting) {
            return -Errno.EROFS;
        }
        snapshots.put(fh, snapshot());
        return 0; // opened direct_io: the snapshot is read to its end whatever getattr's size said
    }

    /** Bytes of the open snapshot from {@code offset}, at most {@code size}. */
    byte[] read(long fh, long offset, long size) {
        ExtentsControlFile query = queries.get(fh);
        if (query != null) {
            return query.read(offset, size);
        }
        byte[] snapshot = snapshots.getOrDefault(fh, new byte[0]);
        int from = (int) Math.min(offset, snapshot.length);
        int to = (int) Math.min(snapshot.length, from + size);
        return java.util.Arrays.copyOfRange(snapshot, from, to);
    }

    /** Takes a write to {@code prefetch} or {@code warm}; returns the count taken or a negated errno. */
    int write(long fh, ByteBuffer bytes) {
        ExtentsControlFile query = queries.get(fh);
        if (query != null) {
            int n = bytes.remaining();
            query.write(bytes);
            return n;
        }
        HintWriter writer = writers.get(fh);
        if (writer == null) {
            return -Errno.EBADF;
        }
        int n = bytes.remaining();
        writer.write(bytes);
        return n;
    }

    boolean release(long fh) {
        ExtentsControlFile query = queries.remove(fh);
        if (query != null) {
            query.close();
            return true;
        }
        HintWriter writer = writers.remove(fh);
        if (writer != null) {
            writer.close();
            return true;
        }
        return snapshots.remove(fh) != null;
    }

    boolean isOpen(long fh) {
        return snapshots.containsKey(fh) || writers.containsKey(fh) || queries.containsKey(fh);
    }

    private byte[] snapshot() {
        return stats.get().getBytes(StandardCharsets.UTF_8);
    }
}
