package io.os2g.fuse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one mount's /dev/fuse: threads that read a request each, call the {@link FuseFileSystem} and
 * write the reply. The kernel protocol, not libfuse: structs are read and written at the offsets of
 * {@code include/uapi/linux/fuse.h}, which has the same layout on every architecture (fixed-width
 * fields, 64-bit aligned). INIT is negotiated by protocol minor ({@link Negotiation}); a READ the
 * kernel interrupts is answered EINTR; an opcode os2g does not serve ENOSYS.
 *
 * <p>Threads: {@code threads} serve at first; whenever none is left reading /dev/fuse (all wait on
 * reads of a slow store), one more starts, up to {@code threads} + the kernel's background limit, so
 * that an INTERRUPT or a request for staged bytes is always read.
 */
public final class FuseSession implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FuseSession.class);

    // opcodes
    static final int LOOKUP = 1, FORGET = 2, GETATTR = 3, SETATTR = 4, SYMLINK = 6, MKNOD = 8, MKDIR = 9,
            UNLINK = 10, RMDIR = 11, RENAME = 12, LINK = 13, OPEN = 14, READ = 15, WRITE = 16, STATFS = 17,
            FSYNC = 20, FLUSH = 25, RELEASE = 18, SETXATTR = 21, GETXATTR = 22, LISTXATTR = 23, REMOVEXATTR = 24, INIT = 26, OPENDIR = 27,
            READDIR = 28, RELEASEDIR = 29, ACCESS = 34, CREATE = 35, INTERRUPT = 36, DESTROY = 38,
            NOTIFY_REPLY = 41, BATCH_FORGET = 42, FALLOCATE = 43, READDIRPLUS = 44, RENAME2 = 45,
            COPY_FILE_RANGE = 47, TMPFILE = 51;
    static final int FOPEN_DIRECT_IO = 1, FOPEN_KEEP_CACHE = 1 << 1;
    static final int FOPEN_PASSTHROUGH = 1 << 7;
    /** max_background in INIT: the kernel's readahead READs in flight at once. */
    static final int MAX_BACKGROUND = 64;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final int IN_HEADER = 40;
    private static final int ATTR = 88;
    /** The largest request: a 1 MiB write plus its header, the kernel's minimum for a read buffer. */
    private static final int BUFFER = (1 << 20) + 4096;
    /** How long {@link #awaitInit} waits: the kernel sends INIT as the mount is made. */
    private static final java.time.Duration INIT_WAIT = java.time.Duration.ofSeconds(30);

    /**
     * How long the kernel may keep what it is told: names (entry), attributes, and names that are not
     * there (negative; 0 answers ENOENT and caches nothing).
     */
    public record Timeouts(java.time.Duration entry, java.time.Duration attributes, java.time.Duration negative) {
        public static Timeouts forever() {
            java.time.Duration year = java.time.Duration.ofDays(365);
            return new Timeouts(year, year, year);
        }
    }

    private final int device;
    private final Object closeLock = new Object();
    private boolean closed;
    private final FuseFileSystem fs;
    private final Timeouts timeouts;
    /** st_blksize of every node, as the file system says (a power of two). */
    private final int blockSize;
    private final int pageSize;
    /** The largest READ (and WRITE) a reply pipe holds: what INIT tells the kernel to send at most. */
    private final int largestRequest;
    /** The serving threads, grown up to {@link #maxThreads}. */
    private final List<Worker> workers = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final int maxThreads;
    /** Threads waiting in read(2) of /dev/fuse. */
    private final java.util.concurrent.atomic.AtomicInteger reading = new java.util.concurrent.atomic.AtomicInteger();
    /** INIT's outcome: the negotiation, or why the kernel was refused. */
    private final java.util.concurrent.CompletableFuture<Negotiation> init = new java.util.concurrent.CompletableFuture<>();
    /** Whether the kernel agreed to passthrough in INIT (a backing file per open). */
    private volatile boolean passthrough;
    /** READs left to another holder of the descriptor and not answered yet, by request number. */
    private final java.util.concurrent.ConcurrentHashMap<Long, ForwardedRead> forwardedReads = new java.util.concurrent.ConcurrentHashMap<>();
    /** The backing files of the opens the kernel reads itself, and each node's way of reading. */
    private final BackingFiles backingFiles;
    /**
     * Each open directory's entries, listed at its first READDIR and kept until RELEASEDIR: the kernel
     * reads a directory a page at a time, and a listing per page would make a large one quadratic.
     */
    private final java.util.concurrent.ConcurrentHashMap<Long, List<FuseFileSystem.Entry>> openDirectories = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicLong nextDirectoryHandle = new java.util.concurrent.atomic.AtomicLong(1);

    /**
     * @param device an open /dev/fuse whose mount is made (see {@link FuseMounter})
     * @param threads how many requests are served at once at first
     */
    public FuseSession(int device, FuseFileSystem fs, int threads, Timeouts timeouts) {
        this(device, fs, threads, timeouts, Native.pageSize(), PipedReply.largestRead(Native.pageSize()));
    }

    /**
     * As above, for a kernel of pages of {@code pageSize} bytes and READs of at most {@code largestRequest}
     * through a pipe (a test stands for an arm64 kernel so, or for a small pipe).
     */
    FuseSession(int device, FuseFileSystem fs, int threads, Timeouts timeouts, int pageSize, int largestRequest) {
        this.device = device;
        this.backingFiles = new BackingFiles(device);
        this.fs = fs;
        this.timeouts = timeouts;
        this.blockSize = fs.blockSize();
        if (blockSize < 512 || Integer.bitCount(blockSize) != 1) {
            throw new IllegalArgumentException("block size must be a power of two of at least 512: " + blockSize);
        }
        this.pageSize = pageSize;
        this.largestRequest = largestRequest;
        this.maxThreads = threads + MAX_BACKGROUND;
        for (int i = 0; i < threads; i++) {
            workers.add(new Worker(i));
        }
    }

    public void start() {
        workers.forEach(w -> w.thread.start());
    }

    /**
     * Waits for the kernel's INIT (sent as the mount is made) and returns what was agreed.
     *
     * @throws Negotiation.Refused when the kernel is one os2g cannot serve (the mount is then dead: remove it)
     * @throws IllegalStateException when no INIT came in time
     */
    public Negotiation awaitInit() throws InterruptedException {
        try {
            return init.get(INIT_WAIT.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("the kernel sent no FUSE INIT within " + INIT_WAIT.toSeconds() + " s");
        }
    }

    /** Waits until every thread has seen the mount go away (ENODEV). */
    public void join() throws InterruptedException {
        for (Worker w : workers) {
            w.thread.join();
        }
    }

    /** {@link #join}, for at most {@code timeout}; whether every thread ended. */
    public boolean join(java.time.Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Worker w : workers) {
            if (!w.thread.join(java.time.Duration.ofNanos(Math.max(1, deadline - System.nanoTime())))) {
                return false;
            }
        }
        return true;
    }

    /** One serving thread and what another thread needs to see of it (for INTERRUPT). */
    private final class Worker {
        final Thread thread;
        /** The request it serves (0 while it reads /dev/fuse). */
        volatile long serving;
        volatile PipedReply pipe;

        Worker(int index) {
            this.thread = Thread.ofPlatform().name("fuse-" + index).daemon().unstarted(this::serve);
        }

        private void serve() {
            try (Arena arena = Arena.ofConfined(); PipedReply reads = new PipedReply(device, FuseSession.this, pageSize)) {
                pipe = reads;
                MemorySegment in = arena.allocate(BUFFER, pageSize);
                SmallReply reply = new SmallReply(device, arena);
                while (true) {
                    reading.incrementAndGet();
                    long n = Native.read(device, in);
                    if (reading.decrementAndGet() == 0 && n > 0) {
                        grow();
                    }
                    if (n <= 0) {
                        int errno = n == 0 ? FuseErrno.ENODEV : Native.errno(); // 0: a harness's peer hung up
                        if (errno == FuseErrno.EINTR || errno == FuseErrno.ENOENT || errno == FuseErrno.EAGAIN) {
                            continue; // ENOENT: the request was interrupted before we read it
                        }
                        if (errno != FuseErrno.ENODEV) {
                            LOG.error("reading /dev/fuse failed: errno {}", errno);
                        }
                        return;
                    }
                    try {
                        dispatch(in, n, reply, reads, this);
                    } finally {
                        serving = 0;
                    }
                }
            }
        }
    }

    /** No thread is left reading requests: one more, while there may be more. */
    private void grow() {
        synchronized (workers) {
            if (workers.size() >= maxThreads || closed()) {
                return;
            }
            Worker w = new Worker(workers.size());
            workers.add(w);
            w.thread.start();
            if (workers.size() == maxThreads) {
                LOG.warn("all {} FUSE threads are busy (a slow store?): requests wait for one", maxThreads);
            }
        }
    }

    private boolean closed() {
        synchronized (closeLock) {
            return closed;
        }
    }

    /**
     * One request. Each opcode has its own method, and this stays small (one error reply, no struct
     * written here): the JIT compiles what a workload calls, not the whole protocol, which matters for
     * a fresh mount's first READs.
     */
    private void dispatch(MemorySegment buffer, long n, SmallReply reply, PipedReply pipe, Worker worker) {
        if (n < IN_HEADER || buffer.get(INT, 0) != n) {
            malformed(buffer, n, reply);
            return;
        }
        int opcode = buffer.get(INT, 4);
        long unique = buffer.get(LONG, 8);
        long node = buffer.get(LONG, 16);
        int pid = buffer.get(INT, 32);
        pipe.start(unique); // before it is seen as served: an INTERRUPT then finds the pipe ready for it
        worker.serving = unique;
        MemorySegment body = buffer.asSlice(IN_HEADER, n - IN_HEADER);
        reply.start(unique);
        int errno = 0;
        try {
            switch (opcode) {
                case READ -> read(node, body, unique, pipe);
                case LOOKUP -> lookup(node, body, reply);
                case GETATTR -> getattr(node, body, reply);
                case OPEN -> open(node, body, reply, pid);
                case RELEASE -> release(node, body, reply);
                case READDIR, READDIRPLUS -> readdir(node, body, reply, opcode == READDIRPLUS);
                case OPENDIR -> opendir(reply);
                case RELEASEDIR -> releasedir(body, reply);
                case FORGET -> forget(node, body);
                case BATCH_FORGET -> batchForget(body);
                case INIT -> init(body, reply);
                case SETATTR -> setattr(node, body, reply);
                case WRITE -> write(node, body, reply);
                case STATFS -> statfs(reply);
                case ACCESS -> access(node, body, reply);
                case GETXATTR -> getxattr(node, body, reply);
                case LISTXATTR -> listxattr(node, body, reply);
                case CREATE -> create(node, body, reply, pid);
                case MKDIR -> mkdir(node, body, reply);
                case UNLINK -> {
                    fs.unlink(node, body.getString(0, StandardCharsets.UTF_8));
                    reply.send(0);
                }
                case RMDIR -> {
                    fs.rmdir(node, body.getString(0, StandardCharsets.UTF_8));
                    reply.send(0);
                }
                case RENAME, RENAME2 -> rename(node, body, reply, opcode == RENAME2);
                case FLUSH -> errno = flush(node, body, reply, pid);
                case FSYNC -> errno = fsync(node, body, reply);
                // what no object store has: a write-enabled mount says so, a read-only one is read-only
                case SYMLINK, MKNOD, LINK -> errno = fs.writable() ? FuseErrno.EPERM : FuseErrno.EROFS;
                case SETXATTR, REMOVEXATTR, FALLOCATE, TMPFILE -> errno = fs.writable() ? FuseErrno.EOPNOTSUPP : FuseErrno.EROFS;
                // ENOSYS: the kernel copies through reads and writes instead, and asks no more
                case COPY_FILE_RANGE -> errno = fs.writable() ? FuseErrno.ENOSYS : FuseErrno.EROFS;
                case INTERRUPT -> errno = interrupt(body.get(LONG, 0));
                case DESTROY -> destroy(reply);
                case NOTIFY_REPLY -> {
                    // no reply: os2g asks for no notify retrieval
                }
                default -> errno = FuseErrno.ENOSYS;
            }
        } catch (RuntimeException e) {
            errno = fs.errnoOf(e);
            if (errno <= 0) {
                LOG.warn("FUSE opcode {} on node {} failed: {}", opcode, node, e.toString());
                errno = FuseErrno.EIO;
            }
        } catch (Error e) {
            // out of memory, a stack overflow: the request is answered all the same, or its caller hangs in D state
            LOG.error("FUSE opcode {} on node {} failed: {}", opcode, node, e.toString());
            errno = FuseErrno.EIO;
        }
        if (errno != 0) {
            reply.error(errno);
        }
    }

    /**
     * A request too short for its header, or whose length is not what was read: a kernel never sends
     * one (a harness does). Answered EIO where its number can be read.
     */
    private void malformed(MemorySegment buffer, long n, SmallReply reply) {
        LOG.warn("malformed FUSE request: {} bytes read, {} in its header", n, n >= 4 ? buffer.get(INT, 0) : -1);
        if (n >= 16) {
            reply.start(buffer.get(LONG, 8));
            reply.error(FuseErrno.EIO);
        }
    }

    /**
     * INTERRUPT of request {@code target}: a READ this session serves is cancelled (the file system
     * gives up waiting and answers EINTR); a READ left to another holder is answered EINTR here. Any
     * other request finishes as it would (no reply). A request not seen yet is one read but not
     * registered: EAGAIN asks the kernel to send the INTERRUPT again.
     */
    private int interrupt(long target) {
        for (Worker w : workers) {
            if (w.serving == target) {
                PipedReply p = w.pipe;
                if (p != null) {
                    p.interrupt(target);
                }
                return 0;
            }
        }
        ForwardedRead forwarded = forwardedReads.remove(target);
        if (forwarded != null) {
            answerError(target, FuseErrno.EINTR);
            return 0;
        }
        return FuseErrno.EAGAIN;
    }

    private void read(long node, MemorySegment body, long unique, PipedReply pipe) {
        int size = body.get(INT, 16);
        if (size > Math.min(largestRequest, pipe.holds())) {
            readThroughMemory(node, body.get(LONG, 0), body.get(LONG, 8), size, unique, pipe);
            return;
        }
        try {
            fs.read(node, body.get(LONG, 0), body.get(LONG, 8), size, pipe);
            if (!pipe.forwarded()) {
                if (!pipe.begun()) {
                    throw new IllegalStateException("read of node " + node + " gave no reply");
                }
                pipe.send();
            }
        } catch (RuntimeException | Error e) {
            if (pipe.begun()) {
                pipe.discard();
            }
            throw e;
        }
    }

    /**
     * A READ larger than a reply pipe: asked of the file system a pipe's worth at a time into memory,
     * answered whole with one write (never a short reply before the end of the file: the kernel would
     * take it for the end).
     */
    private void readThroughMemory(long node, long handle, long offset, int size, long unique, PipedReply pipe) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(16L + size, 8);
            MemoryReply reply = new MemoryReply(out.asSlice(16), pipe);
            long done = 0;
            while (done < size) {
                int piece = (int) Math.min(Math.min(largestRequest, pipe.holds()), size - done);
                reply.piece(done);
                fs.read(node, handle, offset + done, piece, reply);
                if (!reply.complete()) {
                    throw new IllegalStateException("read of node " + node + " gave no whole reply");
                }
                done += reply.pieceLength();
                if (reply.pieceLength() < piece) {
                    break; // the end of the file
                }
            }
            out.set(INT, 0, (int) (16 + done));
            out.set(INT, 4, 0);
            out.set(LONG, 8, unique);
            LentDeviceReplies.reply(device, out.asSlice(0, 16 + done));
        }
    }

    private void lookup(long node, MemorySegment body, SmallReply reply) {
        String name = body.getString(0, StandardCharsets.UTF_8);
        FuseFileSystem.Attributes found;
        try {
            found = fs.lookup(node, name);
        } catch (RuntimeException e) {
            if (fs.errnoOf(e) != FuseErrno.ENOENT || timeouts.negative().isZero()) {
                throw e;
            }
            set(reply.body(), 16, timeouts.negative()); // node 0: "not there", for this long
            reply.send(40 + ATTR);
            return;
        }
        entry(reply.body(), found);
        reply.send(40 + ATTR);
    }

    private void getattr(long node, MemorySegment body, SmallReply reply) {
        // fuse_getattr_in: getattr_flags, dummy, fh; FUSE_GETATTR_FH (1) says fh is set
        long handle = (body.get(INT, 0) & 1) != 0 ? body.get(LONG, 8) : -1;
        attributesOut(reply.body(), fs.getattr(node, handle));
        reply.send(16 + ATTR);
    }

    private void setattr(long node, MemorySegment body, SmallReply reply) {
        // fuse_setattr_in: valid, padding, fh, size, lock_owner, atime, mtime, ctime, their nsecs, mode
        int valid = body.get(INT, 0);
        long handle = (valid & FuseFileSystem.Changes.FH) != 0 ? body.get(LONG, 8) : -1;
        attributesOut(reply.body(), fs.setattr(node, new FuseFileSystem.Changes(valid, handle, body.get(LONG, 16), body.get(INT, 68))));
        reply.send(16 + ATTR);
    }

    private void open(long node, MemorySegment body, SmallReply reply, int pid) {
        FuseFileSystem.Opened opened = fs.open(node, body.get(INT, 0), pid);
        BackingFiles.Mode mode = openOut(reply.body(), node, opened);
        reply.send(16);
        opened(opened, mode);
    }

    /** CREATE: fuse_create_in (flags, mode, umask, open_flags) and the name; answered with an entry and an open. */
    private void create(long parent, MemorySegment body, SmallReply reply, int pid) {
        String name = body.getString(16, StandardCharsets.UTF_8);
        FuseFileSystem.Created created = fs.create(parent, name, body.get(INT, 0), body.get(INT, 4) & ~body.get(INT, 8), pid);
        MemorySegment o = reply.body();
        entry(o, created.attributes());
        BackingFiles.Mode mode = openOut(o.asSlice(40 + ATTR), created.attributes().node(), created.opened());
        reply.send(40 + ATTR + 16);
        opened(created.opened(), mode);
    }

    private void mkdir(long parent, MemorySegment body, SmallReply reply) {
        // fuse_mkdir_in: mode, umask
        FuseFileSystem.Attributes made = fs.mkdir(parent, body.getString(8, StandardCharsets.UTF_8), body.get(INT, 0) & ~body.get(INT, 4));
        entry(reply.body(), made);
        reply.send(40 + ATTR);
    }

    /** RENAME: fuse_rename_in (newdir); RENAME2: fuse_rename2_in (newdir, flags, padding); then both names. */
    private void rename(long parent, MemorySegment body, SmallReply reply, boolean two) {
        int at = two ? 16 : 8;
        String name = body.getString(at, StandardCharsets.UTF_8);
        String newName = body.getString(at + name.getBytes(StandardCharsets.UTF_8).length + 1, StandardCharsets.UTF_8);
        fs.rename(parent, name, body.get(LONG, 0), newName, two ? body.get(INT, 8) : 0);
        reply.send(0);
    }

    /** FLUSH (fuse_flush_in: fh): a close(2). A mount that writes nothing answers ENOSYS once, and the kernel sends no more. */
    private int flush(long node, MemorySegment body, SmallReply reply, int pid) {
        if (!fs.writable()) {
            return FuseErrno.ENOSYS;
        }
        fs.flush(node, body.get(LONG, 0), pid);
        reply.send(0);
        return 0;
    }

    private int fsync(long node, MemorySegment body, SmallReply reply) {
        if (!fs.writable()) {
            return FuseErrno.ENOSYS;
        }
        fs.fsync(node, body.get(LONG, 0));
        reply.send(0);
        return 0;
    }

    /** fuse_open_out for {@code opened}, with its backing file registered where the kernel reads one. */
    private BackingFiles.Mode openOut(MemorySegment o, long node, FuseFileSystem.Opened opened) {
        BackingFiles.Mode mode = backingFiles.open(node, opened.handle(), passthrough ? opened.backing() : null, opened.directIo());
        if (passthrough && opened.backing() != null && !backingFiles.usable()) {
            passthrough = false;
            fs.passthroughUsable(false); // refused for lack of privilege: stop looking for backing files
        }
        o.set(LONG, 0, opened.handle());
        o.set(INT, 8, mode.openFlags());
        o.set(INT, 12, mode.backingId());
        return mode;
    }

    private void opened(FuseFileSystem.Opened opened, BackingFiles.Mode mode) {
        if (mode.backingId() > 0) {
            fs.passthroughOpened(opened.handle());
        }
    }

    private void write(long node, MemorySegment body, SmallReply reply) {
        int size = body.get(INT, 16);
        reply.body().set(INT, 0, fs.write(node, body.get(LONG, 0), body.get(LONG, 8), body.asSlice(40, size)));
        reply.send(8);
    }

    private void release(long node, MemorySegment body, SmallReply reply) {
        long handle = body.get(LONG, 0);
        backingFiles.release(handle);
        fs.release(node, handle);
        reply.send(0);
    }

    private void opendir(SmallReply reply) {
        reply.body().set(LONG, 0, nextDirectoryHandle.getAndIncrement());
        reply.send(16);
    }

    private void releasedir(MemorySegment body, SmallReply reply) {
        openDirectories.remove(body.get(LONG, 0));
        reply.send(0);
    }

    private void readdir(long node, MemorySegment body, SmallReply reply, boolean plus) {
        // fuse_read_in: fh, offset, size; a rewind (offset 0) lists afresh
        long handle = body.get(LONG, 0);
        long offset = body.get(LONG, 8);
        List<FuseFileSystem.Entry> entries = offset == 0 ? null : openDirectories.get(handle);
        if (entries == null) {
            entries = fs.list(node);
            openDirectories.put(handle, entries);
        }
        reply.send(directory(node, entries, offset, body.get(INT, 16), plus));
    }

    private static void destroy(SmallReply reply) {
        reply.send(0); // unmount waits for it
    }

    private void statfs(SmallReply reply) {
        FuseFileSystem.FsStats st = fs.statfs();
        MemorySegment o = reply.body();
        o.set(LONG, 0, st.blocks());
        o.set(LONG, 8, st.blocksFree());
        o.set(LONG, 16, st.blocksFree()); // bavail
        o.set(LONG, 24, st.files());
        o.set(LONG, 32, st.filesFree());
        o.set(INT, 40, st.blockSize());
        o.set(INT, 44, st.nameMax());
        o.set(INT, 48, st.blockSize()); // frsize
        reply.send(80);
    }

    private void access(long node, MemorySegment body, SmallReply reply) {
        fs.access(node, body.get(INT, 0));
        reply.send(0);
    }

    private void getxattr(long node, MemorySegment body, SmallReply reply) {
        reply.sendBytes(fs.getxattr(node, body.getString(8, StandardCharsets.UTF_8)), body.get(INT, 0));
    }

    private void listxattr(long node, MemorySegment body, SmallReply reply) {
        java.io.ByteArrayOutputStream names = new java.io.ByteArrayOutputStream();
        for (String name : fs.listxattr(node)) {
            names.writeBytes(name.getBytes(StandardCharsets.UTF_8));
            names.write(0);
        }
        reply.sendBytes(names.toByteArray(), body.get(INT, 0));
    }

    private void forget(long node, MemorySegment body) {
        fs.forget(node, body.get(LONG, 0));
    }

    private void batchForget(MemorySegment body) {
        int count = body.get(INT, 0);
        for (int i = 0; i < count; i++) {
            fs.forget(body.get(LONG, 8 + 16L * i), body.get(LONG, 16 + 16L * i));
        }
    }

    private void init(MemorySegment in, SmallReply reply) {
        Negotiation.Answer answer;
        try {
            answer = Negotiation.answer(in, reply.body(), largestRequest, pageSize);
        } catch (Negotiation.Refused refused) {
            init.completeExceptionally(refused);
            throw refused;
        }
        reply.send(answer.length());
        Negotiation agreed = answer.negotiation();
        if (agreed != null) { // null: a newer major was told 7.x, and the kernel asks again
            passthrough = agreed.passthrough();
            if (passthrough) {
                fs.passthroughUsable(true);
            }
            init.complete(agreed);
        }
    }

    private void attributes(MemorySegment a, FuseFileSystem.Attributes attributes) {
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
        a.set(INT, 80, blockSize);
    }

    /**
     * fuse_dirent records (READDIRPLUS: fuse_direntplus, each with its entry_out) from entry
     * {@code offset} on, as many as fit {@code size} bytes.
     */
    private MemorySegment directory(long node, List<FuseFileSystem.Entry> entries, long offset, int size, boolean plus) {
        MemorySegment buffer = Arena.ofAuto().allocate(Math.max(size, 1), 8);
        int used = 0;
        int entryOut = plus ? 40 + ATTR : 0;
        for (int i = (int) offset; i < entries.size(); i++) {
            FuseFileSystem.Entry e = entries.get(i);
            byte[] name = e.name().getBytes(StandardCharsets.UTF_8);
            int record = entryOut + ((24 + name.length + 7) & ~7);
            if (used + record > size) {
                break;
            }
            MemorySegment r = buffer.asSlice(used, record);
            FuseFileSystem.Attributes a = e.attributes();
            boolean dot = e.name().equals(".") || e.name().equals("..");
            if (plus && a != null && !dot) {
                entry(r, a); // node 0 for "." and "..": the kernel takes their names only
                fs.entrySent(node, e);
            }
            MemorySegment d = r.asSlice(entryOut);
            d.set(LONG, 0, a != null ? a.node() : dot ? node : 0);
            d.set(LONG, 8, i + 1); // the offset of the next entry
            d.set(INT, 16, name.length);
            d.set(INT, 20, a != null ? (a.mode() >>> 12) & 0xf : 4 /* DT_DIR */);
            MemorySegment.copy(name, 0, d, ValueLayout.JAVA_BYTE, 24, name.length);
            used += record;
        }
        return buffer.asSlice(0, used);
    }

    /** fuse_entry_out for {@code a}, with the entry and attribute timeouts. */
    private void entry(MemorySegment o, FuseFileSystem.Attributes a) {
        o.set(LONG, 0, a.node());
        set(o, 16, timeouts.entry());
        set(o, 24, timeouts.attributes());
        attributes(o.asSlice(40), a);
    }

    /** fuse_attr_out for {@code a}. */
    private void attributesOut(MemorySegment o, FuseFileSystem.Attributes a) {
        o.set(LONG, 0, timeouts.attributes().toSeconds());
        o.set(INT, 8, timeouts.attributes().toNanosPart());
        attributes(o.asSlice(16), a);
    }

    /** A timeout as fuse.h lays it out: seconds at {@code at}, nanoseconds at the struct's _nsec field. */
    private static void set(MemorySegment entryOut, int at, java.time.Duration d) {
        entryOut.set(LONG, at, d.toSeconds());
        entryOut.set(INT, 32 + (at - 16) / 2, d.toNanosPart()); // entry_valid_nsec at 32, attr_valid_nsec at 36
    }

    /** The mount's /dev/fuse descriptor, to lend to a process that answers READs ({@link DeviceHandoff}). */
    public int device() {
        return device;
    }

    /** READ {@code unique} is left to another holder of the descriptor (see {@link ReadReply#forward}). */
    ForwardedRead forwarded(long unique) {
        ForwardedRead read = new ForwardedRead(this, unique);
        forwardedReads.put(unique, read);
        return read;
    }

    void forwardedAnswered(long unique) {
        forwardedReads.remove(unique);
    }

    /** Answers a forwarded request with an error, unless the session is closed (its number may be reused). */
    void answerError(long unique, int errno) {
        synchronized (closeLock) {
            if (!closed) {
                LentDeviceReplies.error(device, unique, errno);
            }
        }
    }

    @Override
    public void close() {
        synchronized (closeLock) {
            if (!closed) {
                closed = true;
                Native.close(device);
            }
        }
    }
}
