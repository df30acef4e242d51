package io.os2g.fuse;

import io.os2g.fuse.FuseFileSystem.Backing;
import io.os2g.fuse.FuseFileSystem.BackingFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The backing files the kernel reads itself (FUSE passthrough), registered on the device, and how each
 * node's opens are read. The kernel reads all open files of one inode one way and fails an open (EIO)
 * that breaks it: while a node has a passthrough open, every open of it must name that same backing
 * file, and while it has an open read through the page cache, none may be passthrough. So an open joins
 * its node's mode: a node read by passthrough serves each later open from its backing file (the
 * version the first open found, until the last of them is released), a node read through the page cache
 * keeps later opens there, and only a node with no open takes a new backing file.
 *
 * <p>A backing file stays registered after its node's last release, for the node's next open (a later
 * epoch of a dataset), which takes it again without verifying the file anew while it offers the same
 * path and the file kept is unchanged (checked on a descriptor held for it: its inode, size and change
 * time); an open that offers another path, or none, or finds the file changed, lets it go. The files
 * kept so are bounded by count (half the descriptor limit, at most {@link #IDLE_MAX}) and by
 * {@link #IDLE_MAX_BYTES}: the kernel holds each open, so one the disk cache sweeps stays on disk until
 * it is let go.
 */
class BackingFiles {

    private static final Logger LOG = LoggerFactory.getLogger(BackingFiles.class);
    private static final int O_RDONLY = 0;
    private static final int EPERM = 1;
    /** _IOW(229, 1, struct fuse_backing_map) and _IOW(229, 2, uint32_t) (the asm-generic encoding of x86-64 and arm64). */
    static final long FUSE_DEV_IOC_BACKING_OPEN = 0x4010E501L;
    static final long FUSE_DEV_IOC_BACKING_CLOSE = 0x4004E502L;
    /** Backing files kept registered for nodes with no open, at most. */
    static final int IDLE_MAX = 16_384;
    /** Bytes in the backing files kept registered for nodes with no open, at most. */
    static final long IDLE_MAX_BYTES = 1L << 30;

    /** How one open is read: its FOPEN flags and backing id (0 for none). */
    record Mode(int openFlags, int backingId) {
    }

    private static final Mode DIRECT = new Mode(FuseSession.FOPEN_DIRECT_IO, 0);

    private static final class NodeState {
        int backingId;
        /** The file registered as {@link #backingId}, as it was verified. */
        BackingFile backing;
        int passthroughOpens;
        int cachedOpens;
    }

    /** What an open holds of its node's state, given back at release. */
    private record Held(long node, boolean passthrough, boolean cached) {
    }

    private final int device;
    private final int idleMax;
    private final Map<Long, NodeState> nodes = new HashMap<>();
    private final Map<Long, Held> handles = new HashMap<>();
    /** The nodes with a backing file registered and no open, the longest idle first. */
    private final Map<Long, NodeState> idle = new LinkedHashMap<>();
    /** The descriptor held open on each registered backing file, by its id. */
    private final Map<Integer, Integer> descriptors = new HashMap<>();
    private long idleBytes;
    private long passthroughOpens;
    private long backingsReused;
    /** Whether the kernel refused a backing file for lack of privilege (then it refuses them all). */
    private boolean refused;

    BackingFiles(int device) {
        this(device, (int) Math.min(IDLE_MAX, openFilesLimit() / 2));
    }

    BackingFiles(int device, int idleMax) {
        this.device = device;
        this.idleMax = idleMax;
    }

    /**
     * How open {@code handle} of {@code node} is read: by the file {@code offer} names (null: none) where
     * the kernel takes it and it verifies, else through the page cache ({@code directIo}: past it). The
     * verification runs outside this object's lock (it may read the file whole).
     */
    Mode open(long node, long handle, Backing offer, boolean directIo) {
        if (directIo) {
            return DIRECT; // joins no inode mode
        }
        Mode joined = join(node, handle, offer);
        if (joined != null) {
            return joined;
        }
        return open(node, handle, offer != null && usable() ? offer.verify() : null);
    }

    /** The node's backing file for this open, where it has one (in use, or kept and still the file offered); else null. */
    private synchronized Mode join(long node, long handle, Backing offer) {
        NodeState state = nodes.get(node);
        if (state == null || state.backingId == 0) {
            return null;
        }
        if (state.passthroughOpens == 0) { // kept from the node's last open
            takeIdle(node, state);
            if (offer == null || !offer.path().equals(state.backing.path()) || !unchanged(state.backingId, state.backing)) {
                letGo(node, state); // another version, gone from the cache, or changed since
                return null;
            }
            backingsReused++;
            offer.reused(state.backing);
        }
        return passthrough(node, handle, state); // whatever this open offers: the kernel takes no other way now
    }

    /** How open {@code handle} of {@code node} is read, given the file verified for it ({@code backing}; null: none). */
    private synchronized Mode open(long node, long handle, BackingFile backing) {
        NodeState state = nodes.computeIfAbsent(node, n -> new NodeState());
        if (state.backingId > 0 && state.passthroughOpens == 0) { // kept by an open released meanwhile
            takeIdle(node, state);
            letGo(node, state);
            state = nodes.computeIfAbsent(node, n -> new NodeState());
        }
        if (state.backingId > 0) { // another open of it registered one meanwhile
            return passthrough(node, handle, state);
        }
        if (backing != null && state.cachedOpens == 0 && !refused) {
            int id = register(backing);
            if (id == -EPERM) {
                refused = true; // not privileged: the kernel will refuse every one
                LOG.info("passthrough needs CAP_SYS_ADMIN, which this mount process lacks: cached files are read through staging");
            }
            if (id > 0) {
                state.backingId = id;
                state.backing = backing;
                return passthrough(node, handle, state); // the kernel refuses KEEP_CACHE with it
            }
        }
        state.cachedOpens++;
        handles.put(handle, new Held(node, false, true));
        return new Mode(FuseSession.FOPEN_KEEP_CACHE, 0);
    }

    private Mode passthrough(long node, long handle, NodeState state) {
        state.passthroughOpens++;
        passthroughOpens++;
        handles.put(handle, new Held(node, true, false));
        return new Mode(FuseSession.FOPEN_PASSTHROUGH, state.backingId);
    }

    /** Gives back what open {@code handle} held; its node's backing file is kept for its next open. */
    synchronized void release(long handle) {
        Held held = handles.remove(handle);
        if (held == null) {
            return;
        }
        NodeState state = nodes.get(held.node());
        if (state == null) {
            return;
        }
        if (held.passthrough() && --state.passthroughOpens == 0) {
            keepIdle(held.node(), state);
        }
        if (held.cached() && --state.cachedOpens == 0 && state.backingId == 0) {
            nodes.remove(held.node());
        }
    }

    private void keepIdle(long node, NodeState state) {
        idle.put(node, state);
        idleBytes += state.backing.size();
        Iterator<Map.Entry<Long, NodeState>> oldest = idle.entrySet().iterator();
        while (idle.size() > idleMax || idleBytes > IDLE_MAX_BYTES) {
            Map.Entry<Long, NodeState> entry = oldest.next();
            oldest.remove();
            idleBytes -= entry.getValue().backing.size();
            letGo(entry.getKey(), entry.getValue());
        }
    }

    private void takeIdle(long node, NodeState state) {
        idle.remove(node);
        idleBytes -= state.backing.size();
    }

    /** Unregisters the backing file of a node with no open, which then has no state. */
    private void letGo(long node, NodeState state) {
        unregister(state.backingId);
        state.backingId = 0;
        state.backing = null;
        nodes.remove(node);
    }

    /** Whether backing files are worth offering: false once the kernel refused one for lack of privilege. */
    synchronized boolean usable() {
        return !refused;
    }

    /** Opens the kernel read by passthrough, since the mount began. */
    synchronized long passthroughOpens() {
        return passthroughOpens;
    }

    /** Of those, the opens that took a backing file kept from their node's last open. */
    synchronized long backingsReused() {
        return backingsReused;
    }

    /** Backing files kept registered for nodes with no open, now. */
    synchronized int idle() {
        return idle.size();
    }

    /**
     * The kernel's id for {@code file} as a backing file; 0 where it cannot be one (gone, changed since it
     * was verified, refused), or -EPERM where the mount process lacks the privilege.
     */
    int register(BackingFile file) {
        int fd = Native.open(file.path().toString(), O_RDONLY | Native.O_CLOEXEC);
        if (fd < 0) {
            return 0; // swept since it was verified: READs
        }
        try (Arena arena = Arena.ofConfined()) {
            if (!stillVerified(fd, file)) {
                LOG.debug("{} changed since it was verified: reads go through the session", file.path());
                return 0;
            }
            MemorySegment map = arena.allocate(16, 8); // struct fuse_backing_map {fd, flags, padding}
            map.set(ValueLayout.JAVA_INT, 0, fd);
            int id = Native.ioctl(device, FUSE_DEV_IOC_BACKING_OPEN, map);
            if (id <= 0) {
                int errno = Native.errno();
                LOG.debug("passthrough refused (errno {}): reads go through the session", errno);
                return errno == EPERM ? -EPERM : 0;
            }
            descriptors.put(id, fd); // held while registered: a kept file is checked on it
            fd = -1;
            return id;
        } finally {
            if (fd >= 0) {
                Native.close(fd);
            }
        }
    }

    /** Whether the backing file registered as {@code id} is still {@code file} as verified (statx of its descriptor). */
    boolean unchanged(int id, BackingFile file) {
        Integer fd = descriptors.get(id);
        return fd != null && stillVerified(fd, file);
    }

    private static boolean stillVerified(int fd, BackingFile file) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment stat = arena.allocate(Native.STATX_SIZE, 8);
            return Native.fstatx(fd, stat) == 0 && file.sameAs(stat.get(ValueLayout.JAVA_LONG, Native.STATX_INO_AT),
                    stat.get(ValueLayout.JAVA_LONG, Native.STATX_SIZE_AT),
                    stat.get(ValueLayout.JAVA_LONG, Native.STATX_CTIME_SEC_AT) * 1_000_000_000L
                            + Integer.toUnsignedLong(stat.get(ValueLayout.JAVA_INT, Native.STATX_CTIME_NSEC_AT)));
        }
    }

    /** This process's limit on open descriptors (its soft RLIMIT_NOFILE); 1,024 where it cannot be read. */
    static long openFilesLimit() {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/limits"))) {
            return lines.filter(line -> line.startsWith("Max open files"))
                    .map(line -> line.substring("Max open files".length()).trim().split("\\s+")[0])
                    .map(soft -> soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft))
                    .findFirst().orElse(1024L);
        } catch (IOException | RuntimeException e) {
            return 1024;
        }
    }

    void unregister(int id) {
        Integer fd = descriptors.remove(id);
        if (fd != null) {
            Native.close(fd);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(ValueLayout.JAVA_INT);
            value.set(ValueLayout.JAVA_INT, 0, id);
            if (Native.ioctl(device, FUSE_DEV_IOC_BACKING_CLOSE, value) != 0) {
                LOG.warn("releasing passthrough backing {} failed: errno {}", id, Native.errno());
            }
        }
    }
}
