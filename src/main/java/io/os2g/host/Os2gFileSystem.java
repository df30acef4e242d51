package io.os2g.host;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.link.AgentLink;
import io.os2g.link.OpenRequest;
import io.os2g.metrics.ReadMetrics;
import io.os2g.namespace.Directory;
import io.os2g.namespace.EntryName;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.staging.ChunkLayout;
import io.os2g.staging.ExtentIndex;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import jnr.ffi.Pointer;
import jnr.ffi.Struct;
import ru.serce.jnrfuse.FuseFillDir;
import ru.serce.jnrfuse.FuseStubFS;
import ru.serce.jnrfuse.struct.FileStat;
import ru.serce.jnrfuse.struct.FuseFileInfo;
import ru.serce.jnrfuse.struct.Statvfs;
import ru.serce.jnrfuse.struct.Timespec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The FUSE operations of a mount. Metadata comes from the namespace, reads from the staging region
 * through {@link StagedReader}; every operation that would change the tree answers EROFS.
 */
public final class Os2gFileSystem extends FuseStubFS {

    private static final Logger LOG = LoggerFactory.getLogger(Os2gFileSystem.class);

    /** O_ACCMODE and the access(2) write bit. */
    private static final int O_ACCMODE = 3;
    private static final int W_OK = 2;
    /** The preferred I/O size: the largest read the kernel sends a libfuse 2 file system. */
    private static final int BLOCK_SIZE = 128 * 1024;
    /** keep_cache is bit 1 of the bit-field word just before {@code fh} in libfuse 2's fuse_file_info. */
    private static final int KEEP_CACHE_BIT = 1 << 1;

    private final Namespace namespace;
    private final AgentLink link;
    private final FsConfig config;
    private final ReadMetrics metrics;
    private final StagedReader reader;
    private final ConcurrentHashMap<Long, OpenHandle> handles = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, String> lastOpenedVersion = new ConcurrentHashMap<>();
    private final AtomicLong nextHandle = new AtomicLong(1);

    public Os2gFileSystem(Namespace namespace, ExtentIndex index, AgentLink link, ChunkLayout layout,
                          FsConfig config, ReadMetrics metrics) {
        this.namespace = namespace;
        this.link = link;
        this.config = config;
        this.metrics = metrics;
        this.reader = new StagedReader(index, link, layout, metrics, config.readDeadline());
    }

    @Override
    public int getattr(String path, FileStat stat) {
        try {
            fill(namespace.resolve(path), stat);
            return 0;
        } catch (RuntimeException e) {
            return fail("getattr", path, e);
        }
    }

    private void fill(Node node, FileStat stat) {
        stat.st_ino.set(node.inode());
        stat.st_uid.set(config.uid());
        stat.st_gid.set(config.gid());
        stat.st_blksize.set(BLOCK_SIZE);
        switch (node) {
            case Node.Dir dir -> {
                stat.st_mode.set(FileStat.S_IFDIR | config.dirMode());
                // 1, as btrfs does: "unknown", so find(1) does not skip sub-directories, and no listing per stat
                stat.st_nlink.set(1);
                stat.st_size.set(BLOCK_SIZE / 32);
                setTimes(stat, config.mountTimeMillis());
            }
            case Node.File file -> {
                stat.st_mode.set(FileStat.S_IFREG | config.fileMode());
                stat.st_nlink.set(1);
                stat.st_size.set(file.size());
                stat.st_blocks.set((file.size() + 511) / 512);
                setTimes(stat, file.mtimeMillis());
            }
        }
    }

    private static void setTimes(FileStat stat, long millis) {
        for (Timespec t : new Timespec[] {stat.st_atim, stat.st_mtim, stat.st_ctim}) {
            t.tv_sec.set(Math.floorDiv(millis, 1000));
            t.tv_nsec.set(Math.floorMod(millis, 1000) * 1_000_000L);
        }
    }

    @Override
    public int readdir(String path, Pointer buf, FuseFillDir filler, long offset, FuseFileInfo fi) {
        try {
            if (!(namespace.resolve(path) instanceof Node.Dir dir)) {
                return -Errno.ENOTDIR;
            }
            Directory listing = namespace.list(dir);
            filler.apply(buf, ".", null, 0);
            filler.apply(buf, "..", null, 0);
            for (String name : listing.entries().keySet()) {
                if (filler.apply(buf, name, null, 0) != 0) {
                    break;
                }
            }
            return 0;
        } catch (RuntimeException e) {
            return fail("readdir", path, e);
        }
    }

    @Override
    public int open(String path, FuseFileInfo fi) {
        try {
            if ((fi.flags.get() & O_ACCMODE) != 0) {
                return -Errno.EROFS;
            }
            Node node = namespace.resolve(path);
            if (!(node instanceof Node.File file)) {
                return -Errno.EISDIR;
            }
            long agentHandle = link.open(new OpenRequest(file.inode(), file.key(), file.etag(), file.size()));
            long fh = nextHandle.getAndIncrement();
            handles.put(fh, new OpenHandle(file, agentHandle));
            fi.fh.set(fh);
            // the kernel may keep its page cache for this inode only while the version is unchanged
            String previous = lastOpenedVersion.put(file.inode(), file.etag());
            if (previous == null || previous.equals(file.etag())) {
                setKeepCache(fi);
            }
            return 0;
        } catch (RuntimeException e) {
            return fail("open", path, e);
        }
    }

    private static void setKeepCache(FuseFileInfo fi) {
        Pointer memory = Struct.getMemory(fi);
        long bits = fi.fh.offset() - 4;
        memory.putInt(bits, memory.getInt(bits) | KEEP_CACHE_BIT);
    }

    @Override
    public int read(String path, Pointer buf, long size, long offset, FuseFileInfo fi) {
        OpenHandle handle = handles.get(fi.fh.get());
        if (handle == null) {
            return -Errno.EBADF;
        }
        try {
            MemorySegment target = MemorySegment.ofAddress(buf.address()).reinterpret(size);
            return reader.read(handle, target, size, offset);
        } catch (RuntimeException e) {
            metrics.error();
            return fail("read", path, e);
        }
    }

    @Override
    public int release(String path, FuseFileInfo fi) {
        OpenHandle handle = handles.remove(fi.fh.get());
        if (handle != null) {
            link.release(handle.agentHandle());
        }
        return 0;
    }

    @Override
    public int statfs(String path, Statvfs stbuf) {
        stbuf.f_bsize.set(BLOCK_SIZE);
        stbuf.f_frsize.set(BLOCK_SIZE);
        // an object store has no fixed size; report a large one with nothing free (read-only)
        stbuf.f_blocks.set(1L << 33);
        stbuf.f_bfree.set(0);
        stbuf.f_bavail.set(0);
        stbuf.f_files.set(Math.max(1, namespace.knownInodes()));
        stbuf.f_ffree.set(0);
        stbuf.f_favail.set(0);
        stbuf.f_namemax.set(EntryName.NAME_MAX);
        return 0;
    }

    @Override
    public int access(String path, int mask) {
        if ((mask & W_OK) != 0) {
            return -Errno.EROFS;
        }
        try {
            namespace.resolve(path);
            return 0;
        } catch (RuntimeException e) {
            return fail("access", path, e);
        }
    }

    @Override
    public int getxattr(String path, String name, Pointer value, long size) {
        return -Errno.ENODATA;
    }

    @Override
    public int listxattr(String path, Pointer list, long size) {
        return 0;
    }

    // Everything below would change the tree: a read-only mount refuses it.

    @Override
    public int write(String path, Pointer buf, long size, long offset, FuseFileInfo fi) {
        return -Errno.EROFS;
    }

    @Override
    public int create(String path, long mode, FuseFileInfo fi) {
        return -Errno.EROFS;
    }

    @Override
    public int mknod(String path, long mode, long rdev) {
        return -Errno.EROFS;
    }

    @Override
    public int mkdir(String path, long mode) {
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
    public int rename(String oldpath, String newpath) {
        return -Errno.EROFS;
    }

    @Override
    public int link(String oldpath, String newpath) {
        return -Errno.EROFS;
    }

    @Override
    public int chmod(String path, long mode) {
        return -Errno.EROFS;
    }

    @Override
    public int chown(String path, long uid, long gid) {
        return -Errno.EROFS;
    }

    @Override
    public int truncate(String path, long size) {
        return -Errno.EROFS;
    }

    @Override
    public int ftruncate(String path, long size, FuseFileInfo fi) {
        return -Errno.EROFS;
    }

    @Override
    public int utimens(String path, Timespec[] timespec) {
        return -Errno.EROFS;
    }

    @Override
    public int setxattr(String path, String name, Pointer value, long size, int flags) {
        return -Errno.EROFS;
    }

    @Override
    public int removexattr(String path, String name) {
        return -Errno.EROFS;
    }

    @Override
    public int fallocate(String path, int mode, long off, long length, FuseFileInfo fi) {
        return -Errno.EROFS;
    }

    public int openHandles() {
        return handles.size();
    }

    private static int fail(String op, String path, RuntimeException e) {
        if (e instanceof ErrnoException errno) {
            if (errno.errno() != Errno.ENOENT) {
                LOG.warn("{} {}: {}", op, path, e.getMessage());
            }
            return -errno.errno();
        }
        LOG.error("{} {} failed", op, path, e);
        return -Errno.EIO;
    }
}
