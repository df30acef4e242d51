package io.os2g.host;

import io.os2g.CachedFile;
import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.WarningLimiter;
import io.os2g.fuse.ForwardedRead;
import io.os2g.fuse.FuseFileSystem;
import io.os2g.fuse.ReadReply;
import io.os2g.link.AgentLink;
import io.os2g.link.OpenRequest;
import io.os2g.link.ReadRequest;
import io.os2g.metrics.ShimMetrics;
import io.os2g.namespace.Directory;
import io.os2g.namespace.EntryName;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The FUSE operations of a mount. Metadata comes from the namespace, reads from the staging region
 * through {@link StagedReader}, changes through {@link Writes} (EROFS unless the mount allows writes;
 * the mount is not "ro" so that the hint files of {@link ControlFiles} can be written). Node ids are
 * the namespace's inodes; {@link NodeTable} turns them back into paths.
 */
public final class Os2gFileSystem implements FuseFileSystem {

    private static final Logger LOG = LoggerFactory.getLogger(Os2gFileSystem.class);
    private final WarningLimiter warnings = new WarningLimiter(LOG);
    /** The extended attribute that leases a staged file's extents (see {@link #getxattr}). */
    static final String EXTENTS_XATTR = "user.os2g.extents";
    /** Linux's bound on an extended attribute's value. */
    private static final int XATTR_SIZE_MAX = 65536;

    /** O_ACCMODE and the access(2) write bit. */
    private static final int O_ACCMODE = 3;
    private static final int W_OK = 2;
    /**
     * The preferred I/O size (st_blksize, and statfs's block size). A reader that sizes its buffer by
     * it (Python's {@code open}, stdio) asks 128 KiB first, and the kernel reads ahead 256 KiB: a
     * JPEG-sized file in one READ, where a 4 KiB block size splits it into three.
     */
    static final int BLOCK_SIZE = 128 * 1024;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFREG = 0100000;
    /** Node ids of the control directory and its files: above any inode the namespace hands out. */
    private static final long CONTROL_NODES = Long.MAX_VALUE - 16;
    /** The largest read the kernel sends, for a copy where a splice is refused. */
    private static final int LARGEST_READ = 1 << 20;

    private final Namespace namespace;
    private final AgentLink link;
    private final FsConfig config;
    private final ShimMetrics metrics;
    private final StagedReader reader;
    private final NodeTable nodes = new NodeTable();
    private final ConcurrentHashMap<Long, OpenHandle> handles = new ConcurrentHashMap<>();
    /** Extent leases by inode, each held while the file has an open handle. */
    private final ConcurrentHashMap<Long, ExtentLease> leases = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);
    /** Each FUSE thread's buffer for reads that are copied, not spliced. */
    private final ThreadLocal<MemorySegment> copyBuffers = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(LARGEST_READ, 4096));
    /** Whether the kernel reads backing files itself (INIT agreed to passthrough). */
    private volatile boolean passthrough;
    /** Whether a bucket's own {@code .os2g/} was logged as hidden by the control directory (once). */
    private volatile boolean shadowReported;

    private final ControlFiles control;
    private final Writes writes;

    /** @param stats the {@code /.os2g/stats} document, made when that file is opened */
    public Os2gFileSystem(Namespace namespace, AgentLink link, ChunkLayout layout,
                          FsConfig config, ShimMetrics metrics, Supplier<String> stats) {
        this.namespace = namespace;
        this.link = link;
        this.config = config;
        this.metrics = metrics;
        this.reader = new StagedReader(link, layout, metrics, config.readDeadline());
        this.control = new ControlFiles(stats, namespace, link, metrics, config.mountPoint(), reader);
        this.writes = new Writes(config.writes(), namespace, link, metrics);
    }

    private static long controlNode(String path) {
        return path.equals(ControlFiles.DIR) ? CONTROL_NODES : CONTROL_NODES + 1 + ControlFiles.NAMES.indexOf(path.substring(ControlFiles.DIR.length() + 1));
    }

    private static String controlPath(long node) {
        return node == CONTROL_NODES ? ControlFiles.DIR : ControlFiles.DIR + "/" + ControlFiles.NAMES.get((int) (node - CONTROL_NODES - 1));
    }

    private String path(long node) {
        return node >= CONTROL_NODES ? controlPath(node) : nodes.path(node);
    }

    @Override
    public Attributes lookup(long parent, String name) {
        String path = NodeTable.child(path(parent), name);
        if (ControlFiles.owns(path)) {
            Attributes a = controlAttributes(path);
            return a;
        }
        try {
            Node node = namespace.resolve(path);
            nodes.remember(node.inode(), path);
            return attributes(node);
        } catch (RuntimeException e) {
            throw failure("lookup", path, e);
        }
    }

    @Override
    public void passthroughUsable(boolean usable) {
        passthrough = usable;
    }

    @Override
    public void passthroughOpened(long handle) {
        metrics.passthroughOpened();
    }

    @Override
    public void entrySent(long directory, Entry entry) {
        if (directory < CONTROL_NODES) {
            nodes.remember(entry.attributes().node(), NodeTable.child(nodes.path(directory), entry.name()));
        }
    }

    @Override
    public void forget(long node, long count) {
        if (node < CONTROL_NODES) {
            nodes.forget(node, count);
        }
    }

    @Override
    public Attributes getattr(long node, long handle) {
        String path = path(node);
        if (ControlFiles.owns(path)) {
            return controlAttributes(path);
        }
        // fstat, or the kernel refreshing an open file's attributes before a read: the version the
        // handle pinned, even if the key has since changed or gone (its reads then fail with EIO)
        OpenHandle open = handle < 0 ? null : handles.get(handle);
        try {
            return attributes(open != null ? open.file() : namespace.resolve(path));
        } catch (RuntimeException e) {
            throw failure("getattr", path, e);
        }
    }

    private Attributes controlAttributes(String path) {
        long now = System.currentTimeMillis();
        if (ControlFiles.isDirectory(path)) {
            return new Attributes(controlNode(path), 0, S_IFDIR | 0555, 1, config.uid(), config.gid(), now);
        }
        if (ControlFiles.isFile(path)) {
            return new Attributes(controlNode(path), control.size(path), S_IFREG | ControlFiles.mode(path), 1,
                    config.uid(), config.gid(), now);
        }
        throw new HostException(Errno.ENOENT, "no control file " + path, null);
    }

    private Attributes attributes(Node node) {
        return switch (node) {
            // nlink 1, as btrfs does: "unknown", so find(1) does not skip sub-directories, and no listing per stat
            case Node.Dir dir -> new Attributes(dir.inode(), BLOCK_SIZE / 32, S_IFDIR | config.dirMode(), 1,
                    config.uid(), config.gid(), config.mountTimeMillis());
            case Node.File file -> {
                WriteHandle writing = writes.writing(file.inode());
                yield writing != null
                        ? new Attributes(file.inode(), writing.size, S_IFREG | config.fileMode(), 1, config.uid(), config.gid(),
                                writing.openedMillis)
                        : new Attributes(file.inode(), file.size(), S_IFREG | config.fileMode(), 1,
                                config.uid(), config.gid(), file.mtimeMillis());
            }
        };
    }

    @Override
    public List<Entry> list(long directory) {
        String path = path(directory);
        List<Entry> entries = new ArrayList<>();
        // "." and ".." without attributes: the kernel takes their names only
        entries.add(new Entry(".", null));
        entries.add(new Entry("..", null));
        if (ControlFiles.isDirectory(path)) {
            for (String name : ControlFiles.NAMES) {
                entries.add(new Entry(name, controlAttributes(ControlFiles.DIR + "/" + name)));
            }
            return entries;
        }
        try {
            if (!(namespace.resolve(path) instanceof Node.Dir dir)) {
                throw new HostException(Errno.ENOTDIR, path + " is not a directory", null);
            }
            Directory listing = namespace.readdir(dir);
            for (var entry : listing.entries().entrySet()) {
                if (dir == namespace.root() && entry.getKey().equals(ControlFiles.DIR.substring(1))) {
                    if (!shadowReported) {
                        shadowReported = true;
                        LOG.warn("bucket keys under {}/ are shadowed by the mount's control directory: they cannot be read here",
                                ControlFiles.DIR.substring(1));
                    }
                    continue;
                }
                entries.add(new Entry(entry.getKey(), attributes(entry.getValue())));
            }
            return entries;
        } catch (RuntimeException e) {
            throw failure("readdir", path, e);
        }
    }

    @Override
    public Opened open(long node, int flags) {
        return open(node, flags, 0);
    }

    @Override
    public Opened open(long node, int flags, int pid) {
        String path = path(node);
        try {
            boolean forWriting = (flags & O_ACCMODE) != 0;
            if (ControlFiles.owns(path)) {
                if (!ControlFiles.isFile(path)) {
                    throw new HostException(ControlFiles.isDirectory(path) ? Errno.EISDIR : Errno.ENOENT, path, null);
                }
                long fh = nextHandle.getAndIncrement();
                int rc = control.open(path, fh, flags, forWriting);
                if (rc != 0) {
                    throw new HostException(-rc, "open " + path, null);
                }
                return Opened.direct(fh);
            }
            if (forWriting) {
                writes.requireWrites();
                if (path.equals("/")) {
                    throw new HostException(Errno.EISDIR, path, null);
                }
                long fh = nextHandle.getAndIncrement();
                writes.start(fh, directory(NodeTable.parent(path)), NodeTable.name(path), flags, pid);
                return Opened.direct(fh);
            }
            Node resolved = namespace.resolve(path);
            if (!(resolved instanceof Node.File file)) {
                throw new HostException(Errno.EISDIR, path, null);
            }
            if (writes.writing(file.inode()) != null) {
                throw new HostException(Errno.EBUSY, path + " is being written: it can be read once it is closed", null);
            }
            OpenRequest request = new OpenRequest(file.inode(), file.key(), file.etag(), file.size());
            long agentHandle = link.open(request);
            long fh = nextHandle.getAndIncrement();
            handles.put(fh, new OpenHandle(file, agentHandle));
            metrics.openFiles(1);
            // a whole object in the agent's disk cache: the kernel reads its file there (no READ comes)
            CachedFile cached = passthrough ? link.cachedFile(request) : null;
            // the page cache survives this open; a new object version (new mtime or size at the next
            // getattr after the TTL) drops it in the kernel
            return cached != null ? Opened.backedBy(fh, new CachedBacking(cached)) : Opened.handle(fh);
        } catch (RuntimeException e) {
            throw failure("open", path, e);
        }
    }

    @Override
    public void read(long node, long fh, long offset, int size, ReadReply reply) {
        OpenHandle handle = handles.get(fh);
        if (handle == null) {
            if (!control.isOpen(fh)) {
                throw new HostException(Errno.EBADF, "read of unknown handle " + fh, null);
            }
            byte[] bytes = control.read(fh, offset, size);
            MemorySegment buffer = copyBuffers.get();
            MemorySegment.copy(bytes, 0, buffer, ValueLayout.JAVA_BYTE, 0, bytes.length);
            reply.begin(bytes.length);
            reply.copy(buffer.asSlice(0, bytes.length));
            return;
        }
        ForwardedRead forwarded = link.agentReplies() ? reply.forward() : null;
        if (forwarded != null) {
            replyInAgent(handle, offset, size, forwarded);
            return;
        }
        int length = (int) Math.max(0, Math.min(size, handle.file().size() - offset));
        metrics.inFlight(1);
        try {
            reply.begin(length);
            try {
                int n = reader.read(handle, StagedReader.reply(reply), size, offset, reply);
                metrics.spliced(n);
                return;
            } catch (StagedReader.TargetRefused refused) {
                reply.restart(); // a pipe that could not take it all: copy instead
                reply.begin(length);
            }
            MemorySegment buffer = copyBuffers.get();
            int n = reader.read(handle, StagedReader.memory(buffer), Math.min(size, buffer.byteSize()), offset, reply);
            reply.copy(buffer.asSlice(0, n));
        } catch (RuntimeException e) {
            throw failure("read", handle.file().key(), e);
        } finally {
            metrics.inFlight(-1);
        }
    }

    /**
     * Leaves the READ to the agent, which holds this mount's /dev/fuse too: the shim sends the READ's
     * number and nothing else; the staged bytes go from the agent's segment files to the kernel. When
     * the agent cannot reply (a failed fetch, the deadline, the agent gone), the shim answers the errno.
     */
    private void replyInAgent(OpenHandle handle, long offset, int size, ForwardedRead forwarded) {
        metrics.inFlight(1);
        link.replyInAgent(new ReadRequest(handle.agentHandle(), offset, size), forwarded.unique(), (replied, failure) -> {
            metrics.inFlight(-1);
            if (failure == null) {
                forwarded.answered();
                metrics.served(replied.bytes());
                metrics.spliced(replied.bytes());
                metrics.answeredByAgent(replied.bytes());
                metrics.staged(replied.hits(), replied.misses());
                return;
            }
            Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            RuntimeException e = cause instanceof RuntimeException r ? r : new IllegalStateException(cause);
            forwarded.fail(errnoOf(failure("read", handle.file().key(), e)));
        });
    }

    @Override
    public Created create(long parent, String name, int flags, int mode, int pid) {
        String path = NodeTable.child(path(parent), name);
        try {
            writes.requireWrites();
            if (ControlFiles.owns(path) || ControlFiles.owns(path(parent))) {
                throw new HostException(Errno.EPERM, "no files can be made in " + ControlFiles.DIR, null);
            }
            long fh = nextHandle.getAndIncrement();
            WriteHandle h = writes.start(fh, directory(path(parent)), name, flags, pid);
            nodes.remember(h.file.inode(), path);
            return new Created(attributes(h.file), Opened.direct(fh));
        } catch (RuntimeException e) {
            throw failure("create", path, e);
        }
    }

    @Override
    public boolean writable() {
        return writes.enabled();
    }

    @Override
    public void flush(long node, long fh, int pid) {
        WriteHandle h = writes.handle(fh);
        if (h != null) {
            try {
                writes.flush(h, pid);
            } catch (RuntimeException e) {
                throw failure("close", h.file.key(), e);
            }
        }
    }

    @Override
    public void fsync(long node, long fh) {
        WriteHandle h = writes.handle(fh);
        if (h != null) {
            try {
                writes.fsync(h);
            } catch (RuntimeException e) {
                throw failure("fsync", h.file.key(), e);
            }
        }
    }

    @Override
    public Attributes mkdir(long parent, String name, int mode) {
        String path = NodeTable.child(path(parent), name);
        try {
            if (ControlFiles.owns(path) || ControlFiles.owns(path(parent))) {
                writes.requireWrites();
                throw new HostException(Errno.EPERM, "no directories can be made in " + ControlFiles.DIR, null);
            }
            Node.Dir made = writes.mkdir(directory(path(parent)), name);
            nodes.remember(made.inode(), path);
            return attributes(made);
        } catch (RuntimeException e) {
            throw failure("mkdir", path, e);
        }
    }

    @Override
    public void unlink(long parent, String name) {
        remove("unlink", parent, name, writes::unlink);
    }

    @Override
    public void rmdir(long parent, String name) {
        remove("rmdir", parent, name, writes::rmdir);
    }

    private void remove(String op, long parent, String name, java.util.function.BiConsumer<Node.Dir, String> removal) {
        String path = NodeTable.child(path(parent), name);
        try {
            writes.requireWrites();
            controlUnchanged(path);
            removal.accept(directory(path(parent)), name);
        } catch (RuntimeException e) {
            throw failure(op, path, e);
        }
    }

    @Override
    public void rename(long parent, String name, long newParent, String newName, int flags) {
        String path = NodeTable.child(path(parent), name);
        String newPath = NodeTable.child(path(newParent), newName);
        try {
            writes.requireWrites();
            controlUnchanged(path);
            controlUnchanged(newPath);
            Node.Dir from = directory(path(parent));
            long node = namespace.inodeOf(from.prefix() + name);
            writes.rename(from, name, directory(path(newParent)), newName, flags);
            nodes.moved(node, newPath); // the kernel keeps the node it had for the name it now has
        } catch (RuntimeException e) {
            throw failure("rename", path, e);
        }
    }

    /** EPERM for the control directory and its files, which no change reaches. */
    private static void controlUnchanged(String path) {
        if (ControlFiles.owns(path)) {
            throw new HostException(Errno.EPERM, path + " cannot be changed", null);
        }
    }

    /** The directory at {@code path}: ENOENT, ENOTDIR as the namespace says. */
    private Node.Dir directory(String path) {
        if (!(namespace.resolve(path) instanceof Node.Dir dir)) {
            throw new HostException(Errno.ENOTDIR, path + " is not a directory", null);
        }
        return dir;
    }

    @Override
    public void release(long node, long fh) {
        if (writes.handle(fh) != null) {
            writes.release(fh);
            return;
        }
        OpenHandle handle = handles.remove(fh);
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
                control.release(fh);
            } catch (RuntimeException e) {
                throw failure("release", path(node), e);
            }
        }
    }

    @Override
    public int blockSize() {
        return BLOCK_SIZE;
    }

    @Override
    public FsStats statfs() {
        // an object store has no fixed size: a large one, with nothing free (read-only) or all of it
        long blocks = 1L << 33;
        return new FsStats(blocks, writes.enabled() ? blocks : 0, 0, 0, BLOCK_SIZE, EntryName.NAME_MAX);
    }

    @Override
    public void access(long node, int mask) {
        String path = path(node);
        if ((mask & W_OK) != 0 && !writes.enabled() && !ControlFiles.isWritable(path) && !path.equals(ControlFiles.EXTENTS)) {
            throw new ReadOnly();
        }
        if (ControlFiles.owns(path)) {
            return;
        }
        try {
            namespace.resolve(path);
        } catch (RuntimeException e) {
            throw failure("access", path, e);
        }
    }

    /**
     * {@value #EXTENTS_XATTR} of a file that is open in this mount: the file is staged whole and pinned,
     * and the value says where its bytes lie ({@link ExtentLease#json}). The lease lasts while any
     * descriptor of the file is open in this mount, and ends when the last one is closed. On a file
     * nobody has open, ENODATA; beyond the xattr size limit, E2BIG (ask {@code /.os2g/extents} instead).
     */
    @Override
    public byte[] getxattr(long node, String name) {
        String path = path(node);
        if (!name.equals(EXTENTS_XATTR) || ControlFiles.owns(path)) {
            throw new NoData();
        }
        try {
            if (!(namespace.resolve(path) instanceof Node.File file)) {
                throw new NoData();
            }
            ExtentLease lease = leases.computeIfAbsent(file.inode(), this::leaseThroughAnOpenHandle);
            if (lease == null) {
                throw new NoData();
            }
            if (openHandleOf(file.inode()) == null && leases.remove(file.inode(), lease)) {
                lease.close(); // the last descriptor closed while the lease was taken
                throw new NoData();
            }
            byte[] bytes = lease.json().getBytes(StandardCharsets.UTF_8);
            if (bytes.length > XATTR_SIZE_MAX) {
                throw new HostException(Errno.E2BIG, "extents of " + path + " exceed an xattr", null);
            }
            return bytes;
        } catch (NoData e) {
            throw e;
        } catch (RuntimeException e) {
            throw failure("getxattr", path, e);
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
    public List<String> listxattr(long node) {
        String path = path(node);
        if (ControlFiles.owns(path)) {
            return List.of();
        }
        try {
            return namespace.resolve(path) instanceof Node.File ? List.of(EXTENTS_XATTR) : List.of();
        } catch (RuntimeException e) {
            throw failure("listxattr", path, e);
        }
    }

    @Override
    public int write(long node, long fh, long offset, MemorySegment data) {
        WriteHandle h = writes.handle(fh);
        if (h != null) {
            try {
                return writes.write(h, offset, data);
            } catch (RuntimeException e) {
                throw failure("write", h.file.key(), e);
            }
        }
        if (!control.isOpen(fh)) {
            throw new ReadOnly();
        }
        try {
            int rc = control.write(fh, data.asByteBuffer());
            if (rc < 0) {
                throw new HostException(-rc, "write to a control file", null);
            }
            return rc;
        } catch (RuntimeException e) {
            throw failure("write", path(node), e);
        }
    }

    @Override
    public Attributes setattr(long node, Changes changes) {
        String path = path(node);
        if (ControlFiles.owns(path)) {
            // an open with O_TRUNC of a hint file, where the kernel asks apart from the open
            if (!ControlFiles.isWritable(path) || changes.any(~(Changes.SIZE | Changes.FH | Changes.LOCKOWNER))) {
                throw new ReadOnly();
            }
            return controlAttributes(path);
        }
        WriteHandle h = writes.writing(node);
        writes.requireWrites();
        try {
            if (h == null) {
                throw new HostException(Errno.EPERM, path + ": an object is not changed in place", null);
            }
            writes.setattr(h, changes);
            return attributes(h.file);
        } catch (RuntimeException e) {
            throw failure("setattr", path, e);
        }
    }

    /** The errno of a failure of os2g's layers ({@link ErrnoException}) or of this binding's own. */
    @Override
    public int errnoOf(RuntimeException failure) {
        return failure instanceof ErrnoException e ? e.errno() : FuseFileSystem.super.errnoOf(failure);
    }

    /** A failed operation, counted by errno and logged (a few lines per kind and minute), as the exception it answers with. */
    private RuntimeException failure(String op, String path, RuntimeException e) {
        int errno = errnoOf(e);
        if (errno > 0) {
            // ENOENT and ENODATA are answers; EINTR is the reader's own signal
            if (errno != Errno.ENOENT && errno != Errno.ENODATA && errno != Errno.EINTR) {
                metrics.error(errno);
                warnings.warn(op + " " + errno, "{} {}: {}", op, path, e.getMessage());
            }
            return e;
        }
        metrics.error(Errno.EIO);
        LOG.error("{} {} failed", op, path, e);
        return new HostException(Errno.EIO, op + " " + path + " failed: " + e, e);
    }
}
