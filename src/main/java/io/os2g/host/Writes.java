package io.os2g.host;

import io.os2g.Errno;
import io.os2g.ErrnoException;
import io.os2g.WarningLimiter;
import io.os2g.fuse.FuseFileSystem.Changes;
import io.os2g.link.AgentLink;
import io.os2g.link.PublishedObject;
import io.os2g.metrics.ShimMetrics;
import io.os2g.namespace.EntryName;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The changes a mount makes to its bucket, as S3 can make them: new files written in order from the
 * start and published whole at close, overwrites with O_TRUNC, deletes, renames of files by copy and
 * delete, directories that exist while they hold something. What it cannot do fails at once with the
 * errno {@code docs/WRITES.md} names. The bytes go through staging pages the agent reserves and
 * uploads from; this class never talks to the store.
 */
final class Writes {

    private static final Logger LOG = LoggerFactory.getLogger(Writes.class);
    private static final WarningLimiter UNSEEN_CLOSERS = new WarningLimiter(LOG);
    static final int O_TRUNC = 01000;
    static final int O_EXCL = 0200;
    static final int RENAME_NOREPLACE = 1;

    private final WritePolicy policy;
    private final Namespace namespace;
    private final AgentLink link;
    private final ShimMetrics metrics;
    /** Files being written, by open handle and by node. */
    private final ConcurrentHashMap<Long, WriteHandle> byHandle = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, WriteHandle> byNode = new ConcurrentHashMap<>();
    /** Keys this mount published: it may rename them away without --allow-delete. */
    private final Set<String> publishedHere = ConcurrentHashMap.newKeySet();

    Writes(WritePolicy policy, Namespace namespace, AgentLink link, ShimMetrics metrics) {
        this.policy = policy;
        this.namespace = namespace;
        this.link = link;
        this.metrics = metrics;
    }

    boolean enabled() {
        return policy.newFiles();
    }

    /** EROFS on a read-only mount. */
    void requireWrites() {
        if (!policy.newFiles()) {
            throw new io.os2g.fuse.FuseFileSystem.ReadOnly();
        }
    }

    WriteHandle handle(long fh) {
        return byHandle.get(fh);
    }

    /** The file being written at {@code inode}, or null. */
    WriteHandle writing(long inode) {
        return byNode.get(inode);
    }

    /**
     * Starts writing {@code name} in {@code dir} as handle {@code fh}: a new file (CREATE), or an
     * existing one opened with O_TRUNC where overwrites are allowed.
     */
    WriteHandle start(long fh, Node.Dir dir, String name, int flags, int pid) {
        requireWrites();
        if (EntryName.parse(name).isEmpty()) {
            throw new HostException(Errno.EINVAL, "no object can be named " + name);
        }
        Node existing = namespace.entry(dir, name);
        if (existing instanceof Node.Dir) {
            throw new HostException(Errno.EISDIR, dir.prefix() + name + " is a directory");
        }
        if (existing instanceof Node.File file) {
            if (byNode.containsKey(file.inode())) {
                throw new HostException(Errno.EBUSY, file.key() + " is being written by another open");
            }
            if ((flags & O_EXCL) != 0) {
                throw new HostException(Errno.EEXIST, file.key() + " exists");
            }
            if (!policy.overwrite()) {
                throw new HostException(Errno.EPERM, file.key() + " exists, and overwrites are off (--allow-overwrite)");
            }
            if ((flags & O_TRUNC) == 0) {
                throw new HostException(Errno.EPERM, file.key() + " can only be replaced whole: open it with O_TRUNC");
            }
        }
        String key = dir.prefix() + name;
        Node.File file = new Node.File(namespace.inodeOf(key), key, 0, "", System.currentTimeMillis());
        long upload = link.beginWrite(key);
        WriteHandle handle = new WriteHandle(dir, name, file, upload, CallerProcess.of(pid));
        if (byNode.putIfAbsent(file.inode(), handle) != null) {
            link.abortWrite(upload);
            throw new HostException(Errno.EBUSY, key + " is being written by another open");
        }
        byHandle.put(fh, handle);
        namespace.hold(dir, name, file);
        metrics.writeOpened(1);
        return handle;
    }

    /** Appends {@code data} at {@code offset}, which must be where the file ends: S3 takes bytes in order only. */
    int write(WriteHandle h, long offset, MemorySegment data) {
        synchronized (h) {
            usable(h);
            if (offset != h.size) {
                // a file S3 cannot take as written is not published at all: no truncated checkpoints
                throw fail(h, new HostException(Errno.EINVAL, h.file.key() + ": write at " + offset + ", but " + h.size
                        + " bytes are written: files are written in order only, so it will not be published"));
            }
            try {
                long done = 0;
                while (done < data.byteSize()) {
                    if (h.part == null || h.filled == h.part.capacity()) {
                        nextPart(h);
                    }
                    int n = (int) Math.min(data.byteSize() - done, h.part.capacity() - h.filled);
                    link.staging().writePages(h.part.pages(), h.filled, data.asSlice(done, n));
                    h.filled += n;
                    h.size += n;
                    done += n;
                }
                metrics.written(data.byteSize());
                return (int) data.byteSize();
            } catch (RuntimeException e) {
                throw fail(h, e);
            }
        }
    }

    /** Hands the full part to the agent and takes pages for the next one (waiting while the store is behind). */
    private void nextPart(WriteHandle h) {
        sendFullPart(h);
        h.part = link.nextPart(h.upload, h.partsSent + 1);
        h.filled = 0;
    }

    /** Hands the part being filled to the agent for upload, if it is full. */
    private void sendFullPart(WriteHandle h) {
        if (h.part != null && h.filled == h.part.capacity()) {
            link.partWritten(h.upload, h.part.number(), h.filled);
            h.partsSent = h.part.number();
            h.part = null;
        }
    }

    /**
     * A close(2) of a descriptor of {@code h}: the writer's own publishes the file (its errors are this
     * close's), and a writer being killed aborts it: nothing is published. Another process's close (a
     * forked child's copy), or any close of a file still empty (a shell's redirection closes one
     * descriptor and writes through its dup), leaves it to the last close ({@link #release}).
     */
    void flush(WriteHandle h, int pid) {
        synchronized (h) {
            if (h.ended && h.failed == 0) {
                return; // published already
            }
            CallerProcess caller = CallerProcess.of(pid);
            if (h.failed != 0) {
                if (caller.otherThan(h.opener) || caller.killed()) {
                    return;
                }
                throw new HostException(h.failed, h.file.key() + " was not published: an earlier write failed");
            }
            if (caller.killed()) {
                LOG.info("the writer of {} was killed before closing it: nothing published, its upload aborted", h.file.key());
                abort(h);
                return;
            }
            if (caller.otherThan(h.opener) || h.size == 0) {
                return;
            }
            if (!caller.known() && h.synced != h.size) {
                abortUncommitted(h);
                throw new HostException(Errno.EIO, h.file.key() + " was not published: its closer is in another pid namespace "
                        + "and it was not fsync'd after its last write");
            }
            publish(h);
        }
    }

    /**
     * A close by a process os2g cannot see (another pid namespace: FUSE numbers it 0) may be a killed
     * writer's: publishing it could publish a cut file. Only a file fsync'd after its last write, the
     * writer's explicit commit, is published then; any other is aborted, loudly.
     */
    private void abortUncommitted(WriteHandle h) {
        UNSEEN_CLOSERS.warn("unseen-closer", "{}: not published, its upload aborted: os2g cannot see the process that closed it "
                + "(another pid namespace), so a killed writer's close would look the same; fsync before close to publish, "
                + "or run the mount in the writers' pid namespace (hostPID in Kubernetes)", h.file.key());
        abort(h);
    }

    /**
     * fsync(2): every full part written so far is in the store (the object appears only at close); the
     * bytes after the last full part wait in staging for the next part or the close.
     */
    void fsync(WriteHandle h) {
        synchronized (h) {
            usable(h);
            try {
                sendFullPart(h);
                link.flushWrite(h.upload);
                h.synced = h.size;
            } catch (RuntimeException e) {
                throw fail(h, e);
            }
        }
    }

    /** The last descriptor is closed: a file no close published yet is published now (errors only logged). */
    void release(long fh) {
        WriteHandle h = byHandle.remove(fh);
        if (h == null) {
            return;
        }
        metrics.writeOpened(-1);
        synchronized (h) {
            if (!h.ended && !h.opener.known() && h.size > 0 && h.synced != h.size) {
                abortUncommitted(h);
            } else if (!h.ended) {
                try {
                    publish(h);
                } catch (RuntimeException e) {
                    LOG.warn("{} could not be published at its last close: {}", h.file.key(), e.getMessage());
                }
            }
        }
    }

    private void publish(WriteHandle h) {
        usable(h);
        h.ended = true;
        try {
            PublishedObject published = link.finishWrite(h.upload, h.part == null ? 0 : h.part.number(), h.part == null ? 0 : h.filled);
            Node.File file = new Node.File(h.file.inode(), h.file.key(), published.size(), published.etag(),
                    published.lastModifiedMillis());
            namespace.published(h.parent, h.name, file);
            publishedHere.add(h.file.key());
            metrics.published(published.size());
        } catch (RuntimeException e) {
            namespace.release(h.parent, h.name); // never appeared: what was there before shows again
            h.failed = Errno.EIO;
            throw failure(e);
        } finally {
            byNode.remove(h.file.inode(), h);
        }
    }

    private void abort(WriteHandle h) {
        h.ended = true;
        h.failed = Errno.EIO;
        link.abortWrite(h.upload);
        namespace.release(h.parent, h.name);
        byNode.remove(h.file.inode(), h);
        metrics.writeAborted();
    }

    private static void usable(WriteHandle h) {
        if (h.failed != 0) {
            throw new HostException(h.failed, h.file.key() + ": an earlier write failed: nothing will be published");
        }
        if (h.ended) {
            throw new HostException(Errno.EBADF, h.file.key() + " was closed (published) already");
        }
    }

    /** A failed write: the upload is aborted, and this and every later call on the file fail with EIO. */
    private RuntimeException fail(WriteHandle h, RuntimeException e) {
        RuntimeException failure = failure(e);
        int errno = failure instanceof ErrnoException ee ? ee.errno() : Errno.EIO;
        if (errno == Errno.EINTR) {
            return failure; // the writer was interrupted waiting for room: the file goes on
        }
        abort(h);
        h.failed = errno == Errno.EFBIG ? Errno.EFBIG : Errno.EIO;
        return failure;
    }

    private static RuntimeException failure(RuntimeException e) {
        return e instanceof ErrnoException ? e : new HostException(Errno.EIO, "write failed: " + e);
    }

    /** SETATTR of a file being written: its size may be "set" to what it is, its times to now; nothing else. */
    void setattr(WriteHandle h, Changes changes) {
        synchronized (h) {
            if (changes.any(Changes.SIZE) && changes.size() != h.size) {
                throw new HostException(Errno.EINVAL, h.file.key() + ": written bytes cannot be truncated or extended ("
                        + h.size + " -> " + changes.size() + ")");
            }
            if (changes.any(Changes.MODE | Changes.UID | Changes.GID)) {
                throw new HostException(Errno.EPERM, h.file.key() + ": objects have no owner or mode to change");
            }
            if (changes.any(Changes.ATIME | Changes.MTIME)) {
                throw new HostException(Errno.EPERM, h.file.key() + ": an object's time is when it was published");
            }
            // ATIME_NOW, MTIME_NOW (touch): the object's time will be its publication, just after now
        }
    }

    /** mkdir: a directory that exists here while it holds nothing (S3 has no directories); published files make it real. */
    Node.Dir mkdir(Node.Dir dir, String name) {
        requireWrites();
        if (EntryName.parse(name).isEmpty()) {
            throw new HostException(Errno.EINVAL, "no prefix can be named " + name);
        }
        if (namespace.entry(dir, name) != null) {
            throw new HostException(Errno.EEXIST, dir.prefix() + name + " exists");
        }
        String prefix = dir.prefix() + name + "/";
        Node.Dir made = new Node.Dir(namespace.inodeOf(prefix), prefix);
        namespace.hold(dir, name, made);
        return made;
    }

    /** rmdir of an empty directory: one made here is forgotten; one in the bucket (a marker object) deleted. */
    void rmdir(Node.Dir dir, String name) {
        requireWrites();
        if (!(existing(dir, name) instanceof Node.Dir sub)) {
            throw new HostException(Errno.ENOTDIR, dir.prefix() + name + " is not a directory");
        }
        if (!namespace.list(sub).entries().isEmpty()) {
            throw new HostException(Errno.ENOTEMPTY, sub.prefix() + " is not empty");
        }
        namespace.release(dir, name);
        if (namespace.entry(dir, name) != null) { // the bucket holds a marker object for it
            if (!policy.delete()) {
                throw new HostException(Errno.EPERM, sub.prefix() + " is in the bucket, and deletes are off (--allow-delete)");
            }
            link.deleteObject(sub.prefix());
            namespace.deleted(dir, name);
        }
    }

    /** unlink: deletes the key, where deletes are allowed. */
    void unlink(Node.Dir dir, String name) {
        requireWrites();
        if (!(existing(dir, name) instanceof Node.File file)) {
            throw new HostException(Errno.EISDIR, dir.prefix() + name + " is a directory");
        }
        if (byNode.containsKey(file.inode())) {
            throw new HostException(Errno.EBUSY, file.key() + " is being written");
        }
        if (!policy.delete()) {
            throw new HostException(Errno.EPERM, file.key() + ": deletes are off (--allow-delete)");
        }
        link.deleteObject(file.key());
        namespace.deleted(dir, name);
        publishedHere.remove(file.key());
    }

    /**
     * rename of a file: copied to its new key in the store, then deleted. A directory cannot be renamed
     * (every key under it would be copied): EOPNOTSUPP. Returns the renamed file.
     */
    Node.File rename(Node.Dir dir, String name, Node.Dir newDir, String newName, int flags) {
        requireWrites();
        if ((flags & ~RENAME_NOREPLACE) != 0) {
            throw new HostException(Errno.EINVAL, "rename flags " + flags + " (only RENAME_NOREPLACE)");
        }
        if (!(existing(dir, name) instanceof Node.File file)) {
            throw new HostException(Errno.EOPNOTSUPP, dir.prefix() + name + "/ is a directory: renaming one would copy every key under it");
        }
        if (EntryName.parse(newName).isEmpty()) {
            throw new HostException(Errno.EINVAL, "no object can be named " + newName);
        }
        if (byNode.containsKey(file.inode())) {
            throw new HostException(Errno.EBUSY, file.key() + " is being written: rename it once it is closed");
        }
        Node target = namespace.entry(newDir, newName);
        if (target instanceof Node.Dir) {
            throw new HostException(Errno.EISDIR, newDir.prefix() + newName + " is a directory");
        }
        if (target instanceof Node.File replaced) {
            if ((flags & RENAME_NOREPLACE) != 0) {
                throw new HostException(Errno.EEXIST, replaced.key() + " exists");
            }
            if (byNode.containsKey(replaced.inode())) {
                throw new HostException(Errno.EBUSY, replaced.key() + " is being written");
            }
            if (!policy.overwrite()) {
                throw new HostException(Errno.EPERM, replaced.key() + " exists, and overwrites are off (--allow-overwrite)");
            }
        }
        if (!policy.delete() && !publishedHere.contains(file.key())) {
            throw new HostException(Errno.EPERM, file.key() + ": renaming deletes it, and deletes are off (--allow-delete) "
                    + "for keys this mount did not write");
        }
        String to = newDir.prefix() + newName;
        if (to.equals(file.key())) {
            return file;
        }
        PublishedObject moved = link.moveObject(file.key(), to, file.size());
        Node.File renamed = new Node.File(namespace.inodeOf(to), to, moved.size(), moved.etag(), moved.lastModifiedMillis());
        namespace.deleted(dir, name);
        namespace.published(newDir, newName, renamed);
        publishedHere.remove(file.key());
        publishedHere.add(to);
        return renamed;
    }

    /** The entry {@code name} of {@code dir}; ENOENT when there is none. */
    private Node existing(Node.Dir dir, String name) {
        Node node = namespace.entry(dir, name);
        if (node == null) {
            throw new HostException(Errno.ENOENT, dir.prefix() + name + " does not exist");
        }
        return node;
    }
}
