package io.os2g.host;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.link.AgentLink;
import io.os2g.link.OpenRequest;
import io.os2g.WarningLimiter;
import io.os2g.metrics.ReadMetrics;
import io.os2g.namespace.Directory;
import io.os2g.namespace.EntryName;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.cryptomator.jfuse.api.DirFiller;
import org.cryptomator.jfuse.api.FileInfo;
import org.cryptomator.jfuse.api.FuseConfig;
import org.cryptomator.jfuse.api.FuseConnInfo;
import org.cryptomator.jfuse.api.FuseOperations;
import org.cryptomator.jfuse.api.Stat;
import org.cryptomator.jfuse.api.Statvfs;
import org.cryptomator.jfuse.api.TimeSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The FUSE operations of a mount. Metadata comes from the namespace, reads from the staging region
 * through {@link StagedReader}; every operation that would change the tree answers EROFS (the
 * mount is not "ro" only so that the hint files of {@link ControlFiles} can be written).
 */
public final class Os2gFileSystem implements FuseOperations {

    private static final Logger LOG = LoggerFactory.getLogger(Os2gFileSystem.class);
    private final WarningLimiter warnings = new WarningLimiter(LOG);
    /** The extended attribute that leases a staged file's extents (see {@link #getxattr}). */
    static final String EXTENTS_XATTR = "user.os2g.extents";
    /** Linux's bound on an extended attribute's value. */
    private static final int XATTR_SIZE_MAX = 65536;

    /** O_ACCMODE and the access(2) write bit. */
    private static final int O_ACCMODE = 3;
    private static final int W_OK = 2;
    /** The preferred I/O size (st_blksize): one kernel FUSE request with the default readahead. */
    private static final int BLOCK_SIZE = 128 * 1024;
    private static final int KERNEL_READAHEAD = 1024 * 1024;
    /** libfuse 3: replies may be spliced from a pipe to /dev/fuse. */
    private static final int FUSE_CAP_SPLICE_WRITE = 1 << 7;

    private final Namespace namespace;
    private final AgentLink link;
    private final FsConfig config;
    private final ReadMetrics metrics;
    private final StagedReader reader;
    private final ConcurrentHashMap<Long, OpenHandle> handles = new ConcurrentHashMap<>();
    /** Extent leases by inode, each held while the file has an open handle. */
    private final ConcurrentHashMap<Long, ExtentLease> leases = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);
    /** Whether a bucket's own {@code .os2g/} was logged as hidden by the control directory (once). */
    private volatile boolean shadowReported;
    private volatile int splicedReadSize;

    private final org.cryptomator.jfuse.api.Errno errnos;
    private final ControlFiles control;

    /** @param stats the {@code /.os2g/stats} document, made when that file is opened */
    public Os2gFileSystem(Namespace namespace, AgentLink link, ChunkLayout layout,
                          FsConfig config, ReadMetrics metrics, org.cryptomator.jfuse.api.Errno errnos,
                          Supplier<String> stats) {
        this.errnos = errnos;
        this.namespace = namespace;
        this.link = link;
        this.config = config;
        this.metrics = metrics;
        this.reader = new StagedReader(link, layout, metrics, config.readDeadline());
        this.control = new ControlFiles(stats, namespace, link, metrics, config.mountPoint(), reader);
    }

    /**
     * Whether opens set keep_cache themselves (Linux x86_64); elsewhere the mount needs libfuse's
     * auto_cache option, which costs a getattr per open.
     */
    public static boolean keepsCachePerOpen() {
        return FileInfoFlags.supported();
    }

    @Override
    public org.cryptomator.jfuse.api.Errno errno() {
        return errnos;
    }

    @Override
    public Set<Operation> supportedOperations() {
        return EnumSet.of(Operation.GET_ATTR, Operation.READ_DIR, Operation.OPEN, Operation.READ, Operation.RELEASE,
                Operation.STATFS, Operation.ACCESS, Operation.GET_XATTR, Operation.LIST_XATTR, Operation.INIT,
                // WRITE and TRUNCATE take hints at /.os2g/prefetch and /.os2g/warm; the rest is EROFS
                Operation.WRITE, Operation.CREATE, Operation.MKDIR, Operation.UNLINK, Operation.RMDIR,
                Operation.SYMLINK, Operation.RENAME, Operation.CHMOD, Operation.CHOWN,
                Operation.TRUNCATE, Operation.UTIMENS, Operation.SET_XATTR, Operation.REMOVE_XATTR);
    }

    /**
     * Before mounting, by {@link SplicedReads}: read replies may come as pipes, which libfuse splices to
     * /dev/fuse, and reads are at most {@code largestRead} bytes (what a pipe can hold).
     */
    void spliceReplies(int largestRead) {
        splicedReadSize = largestRead;
    }

    /**
     * Asks for 1 MiB kernel readahead (the kernel grants at most its default, which {@link FuseMount}
     * raises where it may); 64 background requests keep several readers' readahead in flight at once.
     */
    @Override
    public void init(FuseConnInfo conn, FuseConfig fuseConfig) {
        if (splicedReadSize > 0 && (conn.capable() & FUSE_CAP_SPLICE_WRITE) != 0) {
            conn.setWant(conn.want() | FUSE_CAP_SPLICE_WRITE);
            // libfuse derives the kernel's largest request (max_pages) from max_write
            conn.setMaxWrite(Math.min(conn.maxWrite(), splicedReadSize));
        }
        conn.setMaxReadahead(KERNEL_READAHEAD);
        conn.setMaxBackground(64);
        conn.setCongestionThreshold(48);
    }

    @Override
    public int getattr(String path, Stat stat, FileInfo fi) {
        if (ControlFiles.owns(path)) {
            return controlAttributes(path, stat);
        }
        // fstat, or the kernel refreshing an open file's attributes before a read: the version the
        // handle pinned, even if the key has since changed or gone (its reads then fail with EIO)
        OpenHandle open = fi == null ? null : handles.get(fi.getFh());
        try {
            fill(open != null ? open.file() : namespace.resolve(path), stat);
            return 0;
        } catch (RuntimeException e) {
            return fail("getattr", path, e);
        }
    }

    private int controlAttributes(String path, Stat stat) {
        stat.setUid(config.uid());
        stat.setGid(config.gid());
        stat.setNLink((short) 1);
        setTimes(stat, System.currentTimeMillis());
        if (ControlFiles.isDirectory(path)) {
            stat.setMode(Stat.S_IFDIR | 0555);
            return 0;
        }
        if (ControlFiles.isFile(path)) {
            stat.setMode(Stat.S_IFREG | ControlFiles.mode(path));
            stat.setSize(control.size(path));
            return 0;
        }
        return -Errno.ENOENT;
    }

    private void fill(Node node, Stat stat) {
        stat.setUid(config.uid());
        stat.setGid(config.gid());
        switch (node) {
            case Node.Dir dir -> {
                stat.setMode(Stat.S_IFDIR | config.dirMode());
                // 1, as btrfs does: "unknown", so find(1) does not skip sub-directories, and no listing per stat
                stat.setNLink((short) 1);
                stat.setSize(BLOCK_SIZE / 32);
                setTimes(stat, config.mountTimeMillis());
                StatFields.set(stat, BLOCK_SIZE, 0);
            }
            case Node.File file -> {
                stat.setMode(Stat.S_IFREG | config.fileMode());
                stat.setNLink((short) 1);
                stat.setSize(file.size());
                setTimes(stat, file.mtimeMillis());
                StatFields.set(stat, BLOCK_SIZE, (file.size() + 511) / 512);
            }
        }
    }

    private static void setTimes(Stat stat, long millis) {
        for (TimeSpec t : new TimeSpec[] {stat.aTime(), stat.mTime(), stat.cTime()}) {
            t.set(java.time.Instant.ofEpochMilli(millis));
        }
    }

    @Override
    public int readdir(String path, DirFiller filler, long offset, FileInfo fi, int flags) {
        if (ControlFiles.isDirectory(path)) {
            filler.fill(".", stat -> { }, 0, 0);
            filler.fill("..", stat -> { }, 0, 0);
            for (String name : ControlFiles.NAMES) {
                filler.fill(name, stat -> { }, 0, 0);
            }
            return 0;
        }
        try {
            if (!(namespace.resolve(path) instanceof Node.Dir dir)) {
                return -Errno.ENOTDIR;
            }
            Directory listing = namespace.readdir(dir);
            // readdirplus: attributes travel with the names, so a walk needs no lookup per entry
            boolean plus = (flags & FuseOperations.FUSE_READDIR_PLUS) != 0;
            int fillFlags = plus ? DirFiller.FUSE_FILL_DIR_PLUS : 0;
            // "." and ".." without attributes: given attributes, libfuse passes "." on with inode 0, which readdir(3) skips
            filler.fill(".", stat -> { }, 0, 0);
            filler.fill("..", stat -> { }, 0, 0);
            for (var entry : listing.entries().entrySet()) {
                if (dir == namespace.root() && entry.getKey().equals(ControlFiles.DIR.substring(1))) {
                    if (!shadowReported) {
                        shadowReported = true;
                        LOG.warn("bucket keys under {}/ are shadowed by the mount's control directory: they cannot be read here",
                                ControlFiles.DIR.substring(1));
                    }
                    continue;
                }
                Node node = entry.getValue();
                if (filler.fill(entry.getKey(), plus ? stat -> fill(node, stat) : stat -> { }, 0, fillFlags) != 0) {
                    break;
                }
            }
            return 0;
        } catch (RuntimeException e) {
            return fail("readdir", path, e);
        }
    }

    @Override
    public int open(String path, FileInfo fi) {
        try {
            boolean forWriting = (fi.getFlags() & O_ACCMODE) != 0;
            if (ControlFiles.owns(path)) {
                if (!ControlFiles.isFile(path)) {
                    return ControlFiles.isDirectory(path) ? -Errno.EISDIR : -Errno.ENOENT;
                }
                long fh = nextHandle.getAndIncrement();
                int rc = control.open(path, fh, fi, forWriting);
                if (rc == 0) {
                    fi.setFh(fh);
                }
                return rc;
            }
            if (forWriting) {
                return -Errno.EROFS;
            }
            Node node = namespace.resolve(path);
            if (!(node instanceof Node.File file)) {
                return -Errno.EISDIR;
            }
            long agentHandle = link.open(new OpenRequest(file.inode(), file.key(), file.etag(), file.size()));
            long fh = nextHandle.getAndIncrement();
            handles.put(fh, new OpenHandle(file, agentHandle));
            metrics.openFiles(1);
            fi.setFh(fh);
            // the page cache survives this open; a new object version (new mtime or size at the next
            // getattr after the TTL) drops it in the kernel
            FileInfoFlags.setKeepCache(fi);
            return 0;
        } catch (RuntimeException e) {
            return fail("open", path, e);
        }
    }

    @Override
    public int read(String path, ByteBuffer buf, long size, long offset, FileInfo fi) {
        // the kernel's buffer, native memory: copies into it are memcpy from the staging segment
        int n = read(path, fi.getFh(), MemorySegment.ofBuffer(buf), Math.min(size, buf.remaining()), offset);
        if (n > 0) {
            buf.position(buf.position() + n);
        }
        return n;
    }

    /** Reads up to {@code size} bytes at {@code offset} of open file {@code fh} into native memory: the count or -errno. */
    int read(String path, long fh, MemorySegment target, long size, long offset) {
        OpenHandle handle = handles.get(fh);
        if (handle == null) {
            if (control.isOpen(fh)) {
                byte[] bytes = control.read(fh, offset, size);
                MemorySegment.copy(bytes, 0, target, ValueLayout.JAVA_BYTE, 0, bytes.length);
                return bytes.length;
            }
            return -Errno.EBADF;
        }
        return read(path, handle, StagedReader.memory(target), size, offset);
    }

    /**
     * Moves up to {@code size} bytes at {@code offset} of open file {@code fh} into {@code pipe} by
     * page reference: the count, -errno, or {@link #NOT_SPLICED} when this read must be copied instead
     * (a control file, a region whose pages stay in place, a pipe that could not take it all: the pipe
     * may then hold part of it).
     */
    int splice(String path, long fh, int pipe, long size, long offset) {
        OpenHandle handle = handles.get(fh);
        if (handle == null) {
            return NOT_SPLICED;
        }
        try {
            int n = read(path, handle, StagedReader.pipe(pipe), size, offset);
            if (n > 0) {
                metrics.spliced(n);
            }
            return n;
        } catch (StagedReader.TargetRefused refused) {
            return NOT_SPLICED;
        }
    }

    /** Whether reads may be spliced now: the staging region in use replaces the pages it reuses. */
    boolean spliceable() {
        try {
            return link.staging().spliceable();
        } catch (RuntimeException agentAway) {
            return false; // the read itself says why
        }
    }

    /** What {@link #splice} answers for a read it cannot splice. */
    static final int NOT_SPLICED = Integer.MIN_VALUE;

    private int read(String path, OpenHandle handle, StagedReader.Target target, long size, long offset) {
        metrics.inFlight(1);
        try {
            return reader.read(handle, target, size, offset);
        } catch (StagedReader.TargetRefused refused) {
            throw refused;
        } catch (RuntimeException e) {
            return fail("read", path, e);
        } finally {
            metrics.inFlight(-1);
        }
    }

    @Override
    public int release(String path, FileInfo fi) {
        OpenHandle handle = handles.remove(fi.getFh());
        if (handle != null) {
            metrics.openFiles(-1);
            long inode = handle.file().inode();
            if (leases.containsKey(inode) && openHandleOf(inode) == null) {
                ExtentLease lease = leases.remove(inode);
                if (lease != null) {
                    lease.close(); // the file's last descriptor in this mount is closed
                }
            }
            link.release(handle.agentHandle());
        } else {
            try {
                control.release(fi.getFh());
            } catch (RuntimeException e) {
                return fail("release", path, e);
            }
        }
        return 0;
    }

    @Override
    public int statfs(String path, Statvfs stbuf) {
        stbuf.setBsize(BLOCK_SIZE);
        stbuf.setFrsize(BLOCK_SIZE);
        // an object store has no fixed size; report a large one with nothing free (read-only)
        stbuf.setBlocks(1L << 33);
        stbuf.setBfree(0);
        stbuf.setBavail(0);
        stbuf.setNameMax(EntryName.NAME_MAX);
        return 0;
    }

    @Override
    public int access(String path, int mask) {
        if ((mask & W_OK) != 0 && !ControlFiles.isWritable(path) && !path.equals(ControlFiles.EXTENTS)) {
            return -Errno.EROFS;
        }
        if (ControlFiles.owns(path)) {
            return ControlFiles.isDirectory(path) || ControlFiles.isFile(path) ? 0 : -Errno.ENOENT;
        }
        try {
            namespace.resolve(path);
            return 0;
        } catch (RuntimeException e) {
            return fail("access", path, e);
        }
    }

    /**
     * {@value #EXTENTS_XATTR} of a file that is open in this mount: the file is staged whole and pinned,
     * and the value says where its bytes lie ({@link ExtentLease#json}). The lease lasts while any
     * descriptor of the file is open in this mount, and ends when the last one is closed. On a file
     * nobody has open, ENODATA; beyond the xattr size limit, E2BIG (ask {@code /.os2g/extents} instead).
     */
    @Override
    public int getxattr(String path, String name, ByteBuffer value) {
        if (!name.equals(EXTENTS_XATTR) || ControlFiles.owns(path)) {
            return -Errno.ENODATA;
        }
        try {
            if (!(namespace.resolve(path) instanceof Node.File file)) {
                return -Errno.ENODATA;
            }
            ExtentLease lease = leases.computeIfAbsent(file.inode(), this::leaseThroughAnOpenHandle);
            if (lease == null) {
                return -Errno.ENODATA;
            }
            if (openHandleOf(file.inode()) == null && leases.remove(file.inode(), lease)) {
                lease.close(); // the last descriptor closed while the lease was taken
                return -Errno.ENODATA;
            }
            byte[] bytes = lease.json().getBytes(StandardCharsets.UTF_8);
            if (bytes.length > XATTR_SIZE_MAX) {
                return -Errno.E2BIG;
            }
            if (value.capacity() == 0) {
                return bytes.length; // the caller asks for the size first
            }
            if (value.remaining() < bytes.length) {
                return -Errno.ERANGE;
            }
            value.put(bytes);
            return bytes.length;
        } catch (RuntimeException e) {
            return fail("getxattr", path, e);
        }
    }

    /**
     * A lease on {@code inode} taken through any of its open handles, or null if it has none. The
     * handle picked may be closing as the lease is taken (the kernel sends RELEASE after close(2)
     * returns, so an earlier descriptor's can arrive now): then another open handle serves.
     */
    private ExtentLease leaseThroughAnOpenHandle(long inode) {
        for (OpenHandle handle = openHandleOf(inode); handle != null; handle = openHandleOf(inode)) {
            try {
                return reader.lease(handle);
            } catch (RuntimeException e) {
                if (handles.containsValue(handle)) {
                    throw e;
                }
            }
        }
        return null;
    }

    private OpenHandle openHandleOf(long inode) {
        for (OpenHandle h : handles.values()) {
            if (h.file().inode() == inode) {
                return h;
            }
        }
        return null;
    }

    @Override
    public int listxattr(String path, ByteBuffer list) {
        if (ControlFiles.owns(path)) {
            return 0;
        }
        try {
            if (!(namespace.resolve(path) instanceof Node.File)) {
                return 0;
            }
        } catch (RuntimeException e) {
            return fail("listxattr", path, e);
        }
        byte[] names = (EXTENTS_XATTR + "\0").getBytes(StandardCharsets.UTF_8);
        if (list.capacity() == 0) {
            return names.length;
        }
        if (list.remaining() < names.length) {
            return -Errno.ERANGE;
        }
        list.put(names);
        return names.length;
    }

    // Everything below would change the tree: a read-only mount refuses it.

    @Override
    public int write(String path, ByteBuffer buf, long size, long offset, FileInfo fi) {
        if (!control.isOpen(fi.getFh())) {
            return -Errno.EROFS;
        }
        try {
            return control.write(fi.getFh(), buf.slice(buf.position(), (int) Math.min(size, buf.remaining())));
        } catch (RuntimeException e) {
            return fail("write", path, e);
        }
    }

    @Override
    public int create(String path, int mode, FileInfo fi) {
        return -Errno.EROFS;
    }

    @Override
    public int mkdir(String path, int mode) {
        return -Errno.EROFS;
    }

    @Override
    public int unlink(String path) {
        return -Errno.EROFS;
    }

    @Override
    public int rmdir(String path) {
        return -Errno.EROFS;
    }

    @Override
    public int symlink(String oldpath, String newpath) {
        return -Errno.EROFS;
    }

    @Override
    public int rename(String oldpath, String newpath, int flags) {
        return -Errno.EROFS;
    }

    @Override
    public int chmod(String path, int mode, FileInfo fi) {
        return -Errno.EROFS;
    }

    @Override
    public int chown(String path, int uid, int gid, FileInfo fi) {
        return -Errno.EROFS;
    }

    @Override
    public int truncate(String path, long size, FileInfo fi) {
        // an open with O_TRUNC of a hint file, where the kernel asks apart from the open
        return ControlFiles.isWritable(path) ? 0 : -Errno.EROFS;
    }

    @Override
    public int utimens(String path, TimeSpec atime, TimeSpec mtime, FileInfo fi) {
        return -Errno.EROFS;
    }

    @Override
    public int setxattr(String path, String name, ByteBuffer value, int flags) {
        return -Errno.EROFS;
    }

    @Override
    public int removexattr(String path, String name) {
        return -Errno.EROFS;
    }

    /** The errno for a failed operation, counted by errno and logged (a few lines per kind and minute). */
    private int fail(String op, String path, RuntimeException e) {
        if (e instanceof ErrnoException errno) {
            if (errno.errno() != Errno.ENOENT) {
                metrics.error(errno.errno());
                warnings.warn(op + " " + errno.errno(), "{} {}: {}", op, path, e.getMessage());
            }
            return -errno.errno();
        }
        metrics.error(Errno.EIO);
        LOG.error("{} {} failed", op, path, e);
        return -Errno.EIO;
    }
}
