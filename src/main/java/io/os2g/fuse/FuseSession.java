package io.os2g.fuse;

import io.os2g.fuse.FuseAbi.Attr;
import io.os2g.fuse.FuseAbi.AttrOut;
import io.os2g.fuse.FuseAbi.CreateIn;
import io.os2g.fuse.FuseAbi.Dirent;
import io.os2g.fuse.FuseAbi.EntryOut;
import io.os2g.fuse.FuseAbi.ForgetIn;
import io.os2g.fuse.FuseAbi.GetattrIn;
import io.os2g.fuse.FuseAbi.HandleIn;
import io.os2g.fuse.FuseAbi.InHeader;
import io.os2g.fuse.FuseAbi.MkdirIn;
import io.os2g.fuse.FuseAbi.OpenIn;
import io.os2g.fuse.FuseAbi.OpenOut;
import io.os2g.fuse.FuseAbi.OutHeader;
import io.os2g.fuse.FuseAbi.ReadIn;
import io.os2g.fuse.FuseAbi.RenameIn;
import io.os2g.fuse.FuseAbi.SetattrIn;
import io.os2g.fuse.FuseAbi.SmallIn;
import io.os2g.fuse.FuseAbi.StatfsOut;
import io.os2g.fuse.FuseAbi.WriteIn;
import io.os2g.fuse.FuseAbi.WriteOut;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one mount's /dev/fuse: threads that read a request each, call the {@link FuseFileSystem} and
 * write the reply. The kernel protocol, not libfuse: structs are read and written by the named
 * fields of {@link FuseAbi}, the layouts of {@code include/uapi/linux/fuse.h}. INIT is negotiated by
 * protocol minor ({@link Negotiation}); a READ the kernel interrupts is answered EINTR; an opcode os2g
 * does not serve ENOSYS.
 *
 * <p>Threads ({@link FuseWorkers}): {@code threads} at first, up to {@code threads} + the kernel's
 * background limit.
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
    static final int FOPEN_DIRECT_IO = 1, FOPEN_KEEP_CACHE = 1 << 1, FOPEN_NOFLUSH = 1 << 5;
    static final int FOPEN_PASSTHROUGH = 1 << 7;
    private static final int O_ACCMODE = 3;
    /** max_background in INIT: the kernel's readahead READs in flight at once. */
    static final int MAX_BACKGROUND = 64;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
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
    private final FuseWorkers workers;
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
        this.workers = new FuseWorkers(this, device, pageSize, threads, threads + MAX_BACKGROUND);
    }

    public void start() {
        workers.start();
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

    /** The device ended (the mount was removed): a wait for an INIT that never came ends with it. */
    void deviceGone() {
        init.completeExceptionally(new IllegalStateException("the mount was removed before the kernel's FUSE INIT"));
    }

    /** Waits until every thread has seen the mount go away (ENODEV). */
    public void join() throws InterruptedException {
        workers.join();
    }

    /** {@link #join}, for at most {@code timeout}; whether every thread ended. */
    public boolean join(java.time.Duration timeout) throws InterruptedException {
        return workers.join(timeout);
    }

    boolean closed() {
        synchronized (closeLock) {
            return closed;
        }
    }

    /**
     * One request. Each opcode has its own method, and this stays small (one error reply, no struct
     * written here): the JIT compiles what a workload calls, not the whole protocol, which matters for
     * a fresh mount's first READs.
     */
    void dispatch(MemorySegment buffer, long n, SmallReply reply, PipedReply pipe, FuseWorkers.Worker worker) {
        if (n < InHeader.SIZE || buffer.get(INT, InHeader.LEN) != n) {
            malformed(buffer, n, reply);
            return;
        }
        int opcode = buffer.get(INT, InHeader.OPCODE);
        long unique = buffer.get(LONG, InHeader.UNIQUE);
        long node = buffer.get(LONG, InHeader.NODEID);
        int pid = buffer.get(INT, InHeader.PID);
        pipe.start(unique); // before it is seen as served: an INTERRUPT then finds the pipe ready for it
        worker.serving = unique;
        MemorySegment body = buffer.asSlice(InHeader.SIZE, n - InHeader.SIZE);
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
                case INTERRUPT -> errno = interrupt(body.get(LONG, SmallIn.INTERRUPT_UNIQUE));
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
        LOG.warn("malformed FUSE request: {} bytes read, {} in its header", n, n >= 4 ? buffer.get(INT, InHeader.LEN) : -1);
        if (n >= InHeader.UNIQUE + 8) {
            reply.start(buffer.get(LONG, InHeader.UNIQUE));
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
        PipedReply serving = workers.serving(target);
        if (serving != null) {
            serving.interrupt(target);
            return 0;
        }
        ForwardedRead forwarded = forwardedReads.remove(target);
        if (forwarded != null) {
            answerError(target, FuseErrno.EINTR);
            return 0;
        }
        return FuseErrno.EAGAIN;
    }

    private void read(long node, MemorySegment body, long unique, PipedReply pipe) {
        int size = body.get(INT, ReadIn.SIZE_BYTES);
        long handle = body.get(LONG, ReadIn.FH);
        long offset = body.get(LONG, ReadIn.OFFSET);
        if (size > Math.min(largestRequest, pipe.holds())) {
            readThroughMemory(node, handle, offset, size, unique, pipe);
            return;
        }
        try {
            fs.read(node, handle, offset, size, pipe);
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
            MemorySegment out = arena.allocate(OutHeader.SIZE + (long) size, 8);
            MemoryReply reply = new MemoryReply(out.asSlice(OutHeader.SIZE), pipe);
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
            out.set(INT, OutHeader.LEN, (int) (OutHeader.SIZE + done));
            out.set(INT, OutHeader.ERROR, 0);
            out.set(LONG, OutHeader.UNIQUE, unique);
            LentDeviceReplies.reply(device, out.asSlice(0, OutHeader.SIZE + done));
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
            MemorySegment o = reply.body(); // node 0: "not there", for this long
            o.set(LONG, EntryOut.ENTRY_VALID, timeouts.negative().toSeconds());
            o.set(INT, EntryOut.ENTRY_VALID_NSEC, timeouts.negative().toNanosPart());
            reply.send(EntryOut.SIZE);
            return;
        }
        entry(reply.body(), found);
        reply.send(EntryOut.SIZE);
    }

    private void getattr(long node, MemorySegment body, SmallReply reply) {
        long handle = (body.get(INT, GetattrIn.GETATTR_FLAGS) & GetattrIn.GETATTR_FH) != 0 ? body.get(LONG, GetattrIn.FH) : -1;
        attributesOut(reply.body(), fs.getattr(node, handle));
        reply.send(AttrOut.SIZE);
    }

    private void setattr(long node, MemorySegment body, SmallReply reply) {
        int valid = body.get(INT, SetattrIn.VALID);
        long handle = (valid & FuseFileSystem.Changes.FH) != 0 ? body.get(LONG, SetattrIn.FH) : -1;
        attributesOut(reply.body(), fs.setattr(node, new FuseFileSystem.Changes(valid, handle, body.get(LONG, SetattrIn.SIZE_BYTES),
                body.get(INT, SetattrIn.MODE))));
        reply.send(AttrOut.SIZE);
    }

    /**
     * OPEN. A file opened read-only has nothing to flush: its close is not a FLUSH round trip (a mount
     * that writes gets one per close otherwise; kernels before 5.16 ignore the flag).
     */
    private void open(long node, MemorySegment body, SmallReply reply, int pid) {
        int flags = body.get(INT, OpenIn.FLAGS);
        FuseFileSystem.Opened opened = fs.open(node, flags, pid);
        BackingFiles.Mode mode = openOut(reply.body(), node, opened);
        if ((flags & O_ACCMODE) == 0) {
            reply.body().set(INT, OpenOut.OPEN_FLAGS, mode.openFlags() | FOPEN_NOFLUSH);
        }
        reply.send(OpenOut.SIZE);
        opened(opened, mode);
    }

    /** CREATE: fuse_create_in and the name; answered with an entry and an open. */
    private void create(long parent, MemorySegment body, SmallReply reply, int pid) {
        String name = body.getString(CreateIn.SIZE, StandardCharsets.UTF_8);
        FuseFileSystem.Created created = fs.create(parent, name, body.get(INT, CreateIn.FLAGS),
                body.get(INT, CreateIn.MODE) & ~body.get(INT, CreateIn.UMASK), pid);
        MemorySegment o = reply.body();
        entry(o, created.attributes());
        BackingFiles.Mode mode = openOut(o.asSlice(EntryOut.SIZE), created.attributes().node(), created.opened());
        reply.send(EntryOut.SIZE + OpenOut.SIZE);
        opened(created.opened(), mode);
    }

    private void mkdir(long parent, MemorySegment body, SmallReply reply) {
        FuseFileSystem.Attributes made = fs.mkdir(parent, body.getString(MkdirIn.SIZE, StandardCharsets.UTF_8),
                body.get(INT, MkdirIn.MODE) & ~body.get(INT, MkdirIn.UMASK));
        entry(reply.body(), made);
        reply.send(EntryOut.SIZE);
    }

    /** RENAME: fuse_rename_in; RENAME2: fuse_rename2_in; then both names. */
    private void rename(long parent, MemorySegment body, SmallReply reply, boolean two) {
        int at = two ? RenameIn.SIZE2 : RenameIn.SIZE;
        String name = body.getString(at, StandardCharsets.UTF_8);
        String newName = body.getString(at + name.getBytes(StandardCharsets.UTF_8).length + 1, StandardCharsets.UTF_8);
        fs.rename(parent, name, body.get(LONG, RenameIn.NEWDIR), newName, two ? body.get(INT, RenameIn.FLAGS2) : 0);
        reply.send(0);
    }

    /** FLUSH: a close(2). A mount that writes nothing answers ENOSYS once, and the kernel sends no more. */
    private int flush(long node, MemorySegment body, SmallReply reply, int pid) {
        if (!fs.writable()) {
            return FuseErrno.ENOSYS;
        }
        fs.flush(node, body.get(LONG, HandleIn.FH), pid);
        reply.send(0);
        return 0;
    }

    private int fsync(long node, MemorySegment body, SmallReply reply) {
        if (!fs.writable()) {
            return FuseErrno.ENOSYS;
        }
        fs.fsync(node, body.get(LONG, HandleIn.FH));
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
        o.set(LONG, OpenOut.FH, opened.handle());
        o.set(INT, OpenOut.OPEN_FLAGS, mode.openFlags());
        o.set(INT, OpenOut.BACKING_ID, mode.backingId());
        return mode;
    }

    private void opened(FuseFileSystem.Opened opened, BackingFiles.Mode mode) {
        if (mode.backingId() > 0) {
            fs.passthroughOpened(opened.handle());
        }
    }

    private void write(long node, MemorySegment body, SmallReply reply) {
        int size = body.get(INT, WriteIn.SIZE_BYTES);
        reply.body().set(INT, WriteOut.SIZE_BYTES, fs.write(node, body.get(LONG, WriteIn.FH), body.get(LONG, WriteIn.OFFSET),
                body.asSlice(WriteIn.SIZE, size)));
        reply.send(WriteOut.SIZE);
    }

    private void release(long node, MemorySegment body, SmallReply reply) {
        long handle = body.get(LONG, HandleIn.FH);
        backingFiles.release(handle);
        fs.release(node, handle);
        reply.send(0);
    }

    private void opendir(SmallReply reply) {
        reply.body().set(LONG, OpenOut.FH, nextDirectoryHandle.getAndIncrement());
        reply.send(OpenOut.SIZE);
    }

    private void releasedir(MemorySegment body, SmallReply reply) {
        openDirectories.remove(body.get(LONG, HandleIn.FH));
        reply.send(0);
    }

    private void readdir(long node, MemorySegment body, SmallReply reply, boolean plus) {
        // a rewind (offset 0) lists afresh
        long handle = body.get(LONG, ReadIn.FH);
        long offset = body.get(LONG, ReadIn.OFFSET);
        List<FuseFileSystem.Entry> entries = offset == 0 ? null : openDirectories.get(handle);
        if (entries == null) {
            entries = fs.list(node);
            openDirectories.put(handle, entries);
        }
        reply.send(directory(node, entries, offset, body.get(INT, ReadIn.SIZE_BYTES), plus));
    }

    private static void destroy(SmallReply reply) {
        reply.send(0); // unmount waits for it
    }

    private void statfs(SmallReply reply) {
        FuseFileSystem.FsStats st = fs.statfs();
        MemorySegment o = reply.body();
        o.set(LONG, StatfsOut.BLOCKS, st.blocks());
        o.set(LONG, StatfsOut.BFREE, st.blocksFree());
        o.set(LONG, StatfsOut.BAVAIL, st.blocksFree());
        o.set(LONG, StatfsOut.FILES, st.files());
        o.set(LONG, StatfsOut.FFREE, st.filesFree());
        o.set(INT, StatfsOut.BSIZE, st.blockSize());
        o.set(INT, StatfsOut.NAMELEN, st.nameMax());
        o.set(INT, StatfsOut.FRSIZE, st.blockSize());
        reply.send(StatfsOut.SIZE);
    }

    private void access(long node, MemorySegment body, SmallReply reply) {
        fs.access(node, body.get(INT, SmallIn.ACCESS_MASK));
        reply.send(0);
    }

    private void getxattr(long node, MemorySegment body, SmallReply reply) {
        reply.sendBytes(fs.getxattr(node, body.getString(SmallIn.GETXATTR_IN_SIZE, StandardCharsets.UTF_8)),
                body.get(INT, SmallIn.GETXATTR_SIZE));
    }

    private void listxattr(long node, MemorySegment body, SmallReply reply) {
        java.io.ByteArrayOutputStream names = new java.io.ByteArrayOutputStream();
        for (String name : fs.listxattr(node)) {
            names.writeBytes(name.getBytes(StandardCharsets.UTF_8));
            names.write(0);
        }
        reply.sendBytes(names.toByteArray(), body.get(INT, SmallIn.GETXATTR_SIZE));
    }

    private void forget(long node, MemorySegment body) {
        fs.forget(node, body.get(LONG, ForgetIn.NLOOKUP));
    }

    private void batchForget(MemorySegment body) {
        int count = body.get(INT, ForgetIn.COUNT);
        for (int i = 0; i < count; i++) {
            long one = ForgetIn.BATCH_SIZE + (long) ForgetIn.ONE_SIZE * i;
            fs.forget(body.get(LONG, one + ForgetIn.ONE_NODEID), body.get(LONG, one + ForgetIn.ONE_NLOOKUP));
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
        a.set(LONG, Attr.INO, attributes.node());
        a.set(LONG, Attr.SIZE_BYTES, attributes.size());
        a.set(LONG, Attr.BLOCKS, (attributes.size() + 511) / 512);
        long seconds = Math.floorDiv(attributes.mtimeMillis(), 1000);
        int nanos = (int) Math.floorMod(attributes.mtimeMillis(), 1000) * 1_000_000;
        a.set(LONG, Attr.ATIME, seconds);
        a.set(LONG, Attr.MTIME, seconds);
        a.set(LONG, Attr.CTIME, seconds);
        a.set(INT, Attr.ATIMENSEC, nanos);
        a.set(INT, Attr.MTIMENSEC, nanos);
        a.set(INT, Attr.CTIMENSEC, nanos);
        a.set(INT, Attr.MODE, attributes.mode());
        a.set(INT, Attr.NLINK, attributes.nlink());
        a.set(INT, Attr.UID, attributes.uid());
        a.set(INT, Attr.GID, attributes.gid());
        a.set(INT, Attr.BLKSIZE, blockSize);
    }

    /**
     * fuse_dirent records (READDIRPLUS: fuse_direntplus, each with its entry_out) from entry
     * {@code offset} on, as many as fit {@code size} bytes.
     */
    private MemorySegment directory(long node, List<FuseFileSystem.Entry> entries, long offset, int size, boolean plus) {
        MemorySegment buffer = Arena.ofAuto().allocate(Math.max(size, 1), 8);
        int used = 0;
        int entryOut = plus ? EntryOut.SIZE : 0;
        for (int i = (int) offset; i < entries.size(); i++) {
            FuseFileSystem.Entry e = entries.get(i);
            byte[] name = e.name().getBytes(StandardCharsets.UTF_8);
            int record = entryOut + ((Dirent.NAME + name.length + 7) & ~7);
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
            d.set(LONG, Dirent.INO, a != null ? a.node() : dot ? node : 0);
            d.set(LONG, Dirent.OFF, i + 1); // the offset of the next entry
            d.set(INT, Dirent.NAMELEN, name.length);
            d.set(INT, Dirent.TYPE, a != null ? (a.mode() >>> 12) & 0xf : 4 /* DT_DIR */);
            MemorySegment.copy(name, 0, d, ValueLayout.JAVA_BYTE, Dirent.NAME, name.length);
            used += record;
        }
        return buffer.asSlice(0, used);
    }

    /** fuse_entry_out for {@code a}, with the entry and attribute timeouts. */
    private void entry(MemorySegment o, FuseFileSystem.Attributes a) {
        o.set(LONG, EntryOut.NODEID, a.node());
        o.set(LONG, EntryOut.ENTRY_VALID, timeouts.entry().toSeconds());
        o.set(INT, EntryOut.ENTRY_VALID_NSEC, timeouts.entry().toNanosPart());
        o.set(LONG, EntryOut.ATTR_VALID, timeouts.attributes().toSeconds());
        o.set(INT, EntryOut.ATTR_VALID_NSEC, timeouts.attributes().toNanosPart());
        attributes(o.asSlice(EntryOut.ATTR), a);
    }

    /** fuse_attr_out for {@code a}. */
    private void attributesOut(MemorySegment o, FuseFileSystem.Attributes a) {
        o.set(LONG, AttrOut.ATTR_VALID, timeouts.attributes().toSeconds());
        o.set(INT, AttrOut.ATTR_VALID_NSEC, timeouts.attributes().toNanosPart());
        attributes(o.asSlice(AttrOut.ATTR), a);
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
