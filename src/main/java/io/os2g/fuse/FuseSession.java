package io.os2g.fuse;

import io.os2g.ErrnoException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one mount's /dev/fuse: threads that read a request each, call the {@link FuseFileSystem} and
 * write the reply. The kernel protocol, not libfuse: structs are read and written at the offsets of
 * {@code include/uapi/linux/fuse.h} (protocol 7.41).
 */
public final class FuseSession implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FuseSession.class);

    // opcodes
    static final int LOOKUP = 1, FORGET = 2, GETATTR = 3, OPEN = 14, READ = 15, STATFS = 17, RELEASE = 18,
            INIT = 26, OPENDIR = 27, READDIR = 28, RELEASEDIR = 29, INTERRUPT = 36, DESTROY = 38, BATCH_FORGET = 42;
    // INIT flags
    static final int FUSE_ASYNC_READ = 1, FUSE_BIG_WRITES = 1 << 5, FUSE_MAX_PAGES = 1 << 22, FUSE_INIT_EXT = 1 << 30;
    static final int FOPEN_KEEP_CACHE = 1 << 1;
    static final int FOPEN_PASSTHROUGH = 1 << 7;
    /** flags2 (the high half of the 64 INIT flags): FUSE_PASSTHROUGH is bit 37. */
    static final int FUSE_PASSTHROUGH_HIGH = 1 << (37 - 32);
    /** _IOW(229, 1, struct fuse_backing_map) and _IOW(229, 2, uint32_t). */
    static final long FUSE_DEV_IOC_BACKING_OPEN = 0x4010E501L;
    static final long FUSE_DEV_IOC_BACKING_CLOSE = 0x4004E502L;
    static final int PROTOCOL_MINOR = 41;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final int IN_HEADER = 40;
    private static final int OUT_HEADER = 16;
    private static final int ATTR = 88;
    /** The largest request: a 1 MiB write plus its header, the kernel's minimum for a read buffer. */
    private static final int BUFFER = (1 << 20) + 4096;
    private static final long FOREVER = 365L * 24 * 3600;

    private final int device;
    private final FuseFileSystem fs;
    private final List<Thread> threads = new ArrayList<>();
    /** The largest READ (and WRITE) the kernel may send: what a reply pipe holds. */
    private final int largestRequest = PipedReply.largestRead();
    /** Whether the kernel agreed to passthrough in INIT (a backing file per open). */
    private volatile boolean passthrough;
    /** Backing ids of the opens read by passthrough, by handle, to unregister at release. */
    private final java.util.concurrent.ConcurrentHashMap<Long, Integer> backingIds = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * @param device an open /dev/fuse whose mount is made (see {@link FuseMounter})
     * @param threads how many requests may be served at once
     */
    public FuseSession(int device, FuseFileSystem fs, int threads) {
        this.device = device;
        this.fs = fs;
        for (int i = 0; i < threads; i++) {
            Thread t = Thread.ofPlatform().name("fuse-" + i).daemon().unstarted(this::serve);
            this.threads.add(t);
        }
    }

    public void start() {
        threads.forEach(Thread::start);
    }

    /** Waits until every thread has seen the mount go away (ENODEV). */
    public void join() throws InterruptedException {
        for (Thread t : threads) {
            t.join();
        }
    }

    private void serve() {
        try (Arena arena = Arena.ofConfined(); PipedReply pipe = new PipedReply(device)) {
            MemorySegment in = arena.allocate(BUFFER, 4096);
            MemorySegment out = arena.allocate(4096, 8);
            MemorySegment iov = arena.allocate(32, 8);
            while (true) {
                long n = Native.read(device, in);
                if (n < 0) {
                    int errno = Native.errno();
                    if (errno == Native.EINTR || errno == Native.ENOENT || errno == Native.EAGAIN) {
                        continue; // ENOENT: the request was interrupted before we read it
                    }
                    if (errno != Native.ENODEV) {
                        LOG.error("reading /dev/fuse failed: errno {}", errno);
                    }
                    return;
                }
                dispatch(in, out, iov, pipe);
            }
        }
    }

    private void dispatch(MemorySegment in, MemorySegment out, MemorySegment iov, PipedReply pipe) {
        int opcode = in.get(INT, 4);
        long unique = in.get(LONG, 8);
        long node = in.get(LONG, 16);
        MemorySegment body = in.asSlice(IN_HEADER);
        out.fill((byte) 0);
        MemorySegment o = out.asSlice(OUT_HEADER);
        try {
            switch (opcode) {
                case INIT -> reply(out, iov, unique, init(body, o));
                case LOOKUP -> {
                    FuseFileSystem.Attributes a = fs.lookup(node, body.getString(0, StandardCharsets.UTF_8));
                    o.set(LONG, 0, a.node());
                    o.set(LONG, 16, FOREVER);
                    o.set(LONG, 24, FOREVER);
                    attributes(o.asSlice(40), a);
                    reply(out, iov, unique, 40 + ATTR);
                }
                case GETATTR -> {
                    o.set(LONG, 0, FOREVER);
                    attributes(o.asSlice(16), fs.getattr(node));
                    reply(out, iov, unique, 16 + ATTR);
                }
                case OPEN -> {
                    FuseFileSystem.Opened opened = fs.open(node, body.get(INT, 0));
                    int backingId = opened.backing() < 0 ? -1 : registerBacking(opened.backing());
                    o.set(LONG, 0, opened.handle());
                    if (backingId >= 0) {
                        backingIds.put(opened.handle(), backingId);
                        o.set(INT, 8, FOPEN_PASSTHROUGH); // the kernel refuses KEEP_CACHE with it
                        o.set(INT, 12, backingId);
                    } else {
                        o.set(INT, 8, FOPEN_KEEP_CACHE);
                    }
                    reply(out, iov, unique, 16);
                }
                case READ -> {
                    pipe.start(unique);
                    try {
                        fs.read(node, body.get(LONG, 0), body.get(LONG, 8), body.get(INT, 16), pipe);
                        if (!pipe.delegated()) {
                            if (!pipe.begun()) {
                                throw new IllegalStateException("read of node " + node + " gave no reply");
                            }
                            pipe.send();
                        }
                    } catch (RuntimeException e) {
                        if (pipe.begun()) {
                            pipe.discard();
                        }
                        throw e;
                    }
                }
                case RELEASE -> {
                    Integer backingId = backingIds.remove(body.get(LONG, 0));
                    if (backingId != null) {
                        unregisterBacking(backingId);
                    }
                    fs.release(node, body.get(LONG, 0));
                    reply(out, iov, unique, 0);
                }
                case OPENDIR -> reply(out, iov, unique, 16); // fuse_open_out, no handle
                case RELEASEDIR -> reply(out, iov, unique, 0);
                case READDIR -> replyWithData(out, iov, unique, directory(node, body.get(LONG, 8), body.get(INT, 16)));
                case STATFS -> {
                    o.set(INT, 40, 4096); // bsize
                    o.set(INT, 44, 255); // namelen
                    o.set(INT, 48, 4096); // frsize
                    reply(out, iov, unique, 80);
                }
                case FORGET, BATCH_FORGET, INTERRUPT -> {
                    // no reply: nodes live as long as the namespace, interrupts are not honoured
                }
                case DESTROY -> reply(out, iov, unique, 0);
                default -> error(out, iov, unique, 38); // ENOSYS
            }
        } catch (ErrnoException e) {
            error(out, iov, unique, e.errno());
        } catch (RuntimeException e) {
            LOG.warn("FUSE opcode {} on node {} failed: {}", opcode, node, e.toString());
            error(out, iov, unique, 5); // EIO
        }
    }

    private int init(MemorySegment in, MemorySegment o) {
        int major = in.get(INT, 0);
        int minor = in.get(INT, 4);
        int readahead = in.get(INT, 8);
        int kernelFlags = in.get(INT, 12);
        int kernelFlags2 = (kernelFlags & FUSE_INIT_EXT) != 0 ? in.get(INT, 16) : 0;
        if (major != 7 || minor < 31) {
            throw new IllegalStateException("kernel FUSE protocol " + major + "." + minor + " is too old (7.31 or later)");
        }
        o.set(INT, 0, 7);
        o.set(INT, 4, Math.min(minor, PROTOCOL_MINOR));
        o.set(INT, 8, readahead);
        o.set(INT, 12, kernelFlags & (FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_MAX_PAGES | FUSE_INIT_EXT));
        o.set(SHORT, 16, (short) 64); // max_background
        o.set(SHORT, 18, (short) 48); // congestion_threshold
        o.set(INT, 20, largestRequest); // max_write
        o.set(INT, 24, 1); // time_gran
        o.set(SHORT, 28, (short) (largestRequest / 4096)); // max_pages: the largest READ too
        if ((kernelFlags2 & FUSE_PASSTHROUGH_HIGH) != 0 && minor >= 40) {
            o.set(INT, 32, FUSE_PASSTHROUGH_HIGH); // flags2
            o.set(INT, 36, 1); // max_stack_depth: a backing file on a plain file system
            passthrough = true;
        }
        return 64;
    }

    /**
     * The kernel's id for {@code fd} as a passthrough backing file, or -1 where it cannot be one (no
     * passthrough on this mount; registering needs CAP_SYS_ADMIN): the open is then served by READs.
     * The descriptor is closed either way: the kernel keeps its own reference.
     */
    private int registerBacking(int fd) {
        try {
            if (!passthrough) {
                return -1;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment map = arena.allocate(16, 8); // struct fuse_backing_map {fd, flags, padding}
                map.set(INT, 0, fd);
                int id = Native.ioctl(device, FUSE_DEV_IOC_BACKING_OPEN, map);
                if (id < 0) {
                    LOG.debug("passthrough refused (errno {}): reads go through the session", Native.errno());
                }
                return id;
            }
        } finally {
            Native.close(fd);
        }
    }

    private void unregisterBacking(int id) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(ValueLayout.JAVA_INT);
            value.set(ValueLayout.JAVA_INT, 0, id);
            if (Native.ioctl(device, FUSE_DEV_IOC_BACKING_CLOSE, value) != 0) {
                LOG.warn("releasing passthrough backing {} failed: errno {}", id, Native.errno());
            }
        }
    }

    private static void attributes(MemorySegment a, FuseFileSystem.Attributes attributes) {
        a.set(LONG, 0, attributes.node());
        a.set(LONG, 8, attributes.size());
        a.set(LONG, 16, (attributes.size() + 511) / 512);
        long seconds = Math.floorDiv(attributes.mtimeMillis(), 1000);
        int nanos = (int) Math.floorMod(attributes.mtimeMillis(), 1000) * 1_000_000;
        for (int t = 0; t < 3; t++) {
            a.set(LONG, 24 + 8 * t, seconds);
            a.set(INT, 48 + 4 * t, nanos);
        }
        a.set(INT, 60, attributes.mode());
        a.set(INT, 64, attributes.nlink());
        a.set(INT, 68, attributes.uid());
        a.set(INT, 72, attributes.gid());
        a.set(INT, 80, 4096); // blksize
    }

    /** fuse_dirent records from entry {@code offset} on, as many as fit {@code size} bytes. */
    private MemorySegment directory(long node, long offset, int size) {
        List<FuseFileSystem.Entry> entries = fs.list(node);
        MemorySegment buffer = Arena.ofAuto().allocate(Math.max(size, 1), 8);
        int used = 0;
        for (int i = (int) offset; i < entries.size(); i++) {
            FuseFileSystem.Entry e = entries.get(i);
            byte[] name = e.name().getBytes(StandardCharsets.UTF_8);
            int record = (24 + name.length + 7) & ~7;
            if (used + record > size) {
                break;
            }
            MemorySegment d = buffer.asSlice(used, record);
            d.set(LONG, 0, e.node());
            d.set(LONG, 8, i + 1); // the offset of the next entry
            d.set(INT, 16, name.length);
            d.set(INT, 20, (e.mode() >>> 12) & 0xf); // DT_* from S_IFMT
            MemorySegment.copy(name, 0, d, ValueLayout.JAVA_BYTE, 24, name.length);
            used += record;
        }
        return buffer.asSlice(0, used);
    }

    private void reply(MemorySegment out, MemorySegment iov, long unique, int bodyLength) {
        out.set(INT, 0, OUT_HEADER + bodyLength);
        out.set(INT, 4, 0);
        out.set(LONG, 8, unique);
        iov.set(ValueLayout.ADDRESS, 0, out);
        iov.set(LONG, 8, OUT_HEADER + bodyLength);
        send(iov, 1);
    }

    private void error(MemorySegment out, MemorySegment iov, long unique, int errno) {
        out.set(INT, 0, OUT_HEADER);
        out.set(INT, 4, -errno);
        out.set(LONG, 8, unique);
        iov.set(ValueLayout.ADDRESS, 0, out);
        iov.set(LONG, 8, OUT_HEADER);
        send(iov, 1);
    }

    private void replyWithData(MemorySegment out, MemorySegment iov, long unique, MemorySegment data) {
        out.set(INT, 0, (int) (OUT_HEADER + data.byteSize()));
        out.set(INT, 4, 0);
        out.set(LONG, 8, unique);
        iov.set(ValueLayout.ADDRESS, 0, out);
        iov.set(LONG, 8, OUT_HEADER);
        iov.set(ValueLayout.ADDRESS, 16, data);
        iov.set(LONG, 24, data.byteSize());
        send(iov, 2);
    }

    private void send(MemorySegment iov, int count) {
        if (Native.writev(device, iov, count) < 0) {
            int errno = Native.errno();
            // ENOENT: the request was interrupted and is gone; anything else is a protocol error of ours
            if (errno != Native.ENOENT) {
                LOG.error("FUSE reply refused by the kernel: errno {}", errno);
            }
        }
    }

    @Override
    public void close() {
        Native.close(device);
    }
}
