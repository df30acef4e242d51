package io.os2g.host;

import io.os2g.fuse.FuseFileSystem;
import io.os2g.fuse.FuseMounter;
import io.os2g.fuse.FuseSession;
import io.os2g.fuse.MountTable;
import io.os2g.fuse.Negotiation;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One kernel mount of an {@link Os2gFileSystem}, served by os2g's own FUSE session ({@link FuseSession}
 * on /dev/fuse). {@link #start} returns once the mount answers; {@link #awaitUnmount} sleeps until it
 * goes away, however it goes. A mount point {@code /dev/fd/N} is a mount another process made and
 * passed on open: this serves it, and that process unmounts it ({@link FuseMounter#preOpened}).
 */
public final class FuseMount {

    private static final Logger LOG = LoggerFactory.getLogger(FuseMount.class);
    private static final int KERNEL_READAHEAD_KB = 1024;
    /** Requests served at once: readers' reads, readahead (up to 64 in the background), listings. */
    private static final int THREADS = 16;
    /** Options the kernel takes at mount(2) (fusermount3 passes them on). */
    private static final List<String> KERNEL_OPTIONS = List.of("allow_other", "default_permissions", "allow_root");
    /** libfuse options os2g's session does itself, or needs not: accepted and dropped. */
    private static final List<String> IGNORED = List.of("auto_cache", "kernel_cache", "rw");

    private final Path mountPoint;
    private final List<String> options;
    /** The descriptor of a mount another process made, or -1 when this one mounts. */
    private final int preOpened;
    private FuseSession session;
    private int uid;

    /**
     * @param options FUSE options, e.g. {@code fsname=bucket,attr_timeout=300,allow_other}
     */
    public FuseMount(Path mountPoint, List<String> options) {
        this.mountPoint = mountPoint.toAbsolutePath().normalize();
        this.options = List.copyOf(options);
        try {
            this.preOpened = FuseMounter.preOpened(this.mountPoint).orElse(-1);
        } catch (IllegalArgumentException e) {
            throw new MountException(e.getMessage(), e);
        }
    }

    public Path mountPoint() {
        return mountPoint;
    }

    /** Mounts and starts serving; the kernel answers on the mount point when this returns. */
    public void start(Os2gFileSystem fs) {
        start(fs, device -> { });
    }

    /**
     * As {@link #start(Os2gFileSystem)}, handing the mount's /dev/fuse descriptor to {@code beforeServing}
     * before the first request is served (to lend it to an agent that answers READs: no READ can come
     * before it has it).
     */
    public void start(Os2gFileSystem fs, java.util.function.IntConsumer beforeServing) {
        String source = "os2g";
        String subtype = "os2g";
        List<String> kernel = new ArrayList<>();
        Duration entry = null, attributes = null, negative = null;
        for (String option : options) {
            String name = option.contains("=") ? option.substring(0, option.indexOf('=')) : option;
            String value = option.contains("=") ? option.substring(option.indexOf('=') + 1) : "";
            switch (name) {
                case "fsname" -> source = value;
                case "subtype" -> subtype = value;
                case "entry_timeout" -> entry = seconds(option, value);
                case "attr_timeout" -> attributes = seconds(option, value);
                case "negative_timeout" -> negative = seconds(option, value);
                default -> {
                    if (kernelOption(option, name, value)) {
                        kernel.add(option);
                    }
                }
            }
        }
        Duration forever = Duration.ofDays(365);
        FuseSession.Timeouts timeouts = new FuseSession.Timeouts(entry != null ? entry : forever,
                attributes != null ? attributes : forever, negative != null ? negative : Duration.ZERO);
        if (preOpened >= 0) {
            if (!kernel.isEmpty()) { // the mount's options were the mounter's to give
                LOG.debug("{}: mounted by another process: {} not applied", mountPoint, String.join(",", kernel));
            }
            serve(preOpened, fs, timeouts, beforeServing);
            return;
        }
        int device;
        try {
            uid = ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue();
            int gid = ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:gid")).intValue();
            device = FuseMounter.mount(mountPoint, source, subtype, String.join(",", kernel), uid, gid);
        } catch (IOException | RuntimeException e) {
            throw new MountException("mount at " + mountPoint + " failed: " + e.getMessage(), e);
        }
        serve(device, fs, timeouts, beforeServing);
        raiseKernelReadahead();
    }

    /**
     * Serves the mount's {@code device} and waits for INIT; a kernel the session refused leaves a dead
     * mount, removed here at once.
     */
    void serve(int device, FuseFileSystem fs, FuseSession.Timeouts timeouts, java.util.function.IntConsumer beforeServing) {
        try {
            session = new FuseSession(device, fs, THREADS, timeouts);
            beforeServing.accept(device);
            session.start();
            Negotiation agreed = session.awaitInit();
            LOG.info("{}: {}", mountPoint, agreed.describe());
        } catch (InterruptedException | RuntimeException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (session == null && preOpened < 0 && MountTable.isMountPoint(mountPoint)) {
                FuseMounter.unmount(mountPoint, uid);
            }
            unmount();
            throw new MountException("mount at " + mountPoint + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Checks FUSE options before anything starts, as {@link #start} reads them.
     *
     * @throws MountException naming the first option os2g does not know, or a bad value
     */
    public static void check(List<String> options) {
        for (String option : options) {
            String name = option.contains("=") ? option.substring(0, option.indexOf('=')) : option;
            String value = option.contains("=") ? option.substring(option.indexOf('=') + 1) : "";
            switch (name) {
                case "fsname", "subtype" -> { }
                case "entry_timeout", "attr_timeout", "negative_timeout" -> seconds(option, value);
                default -> kernelOption(option, name, value);
            }
        }
    }

    /** Whether {@code option} goes to mount(2); false for one accepted and dropped. */
    private static boolean kernelOption(String option, String name, String value) {
        if (KERNEL_OPTIONS.contains(name) && value.isEmpty() && !option.contains("=")) {
            return true;
        }
        if (name.equals("max_read") || name.equals("blksize")) {
            try {
                if (Integer.parseInt(value) > 0) {
                    return true;
                }
            } catch (NumberFormatException e) {
                // refused below
            }
            throw new MountException("mount option " + option + ": not a positive number", null);
        }
        if (IGNORED.contains(name) && !option.contains("=")) {
            return false;
        }
        throw new MountException("mount option " + option + " is not one os2g knows (os2g mount --help lists them)", null);
    }

    private static Duration seconds(String option, String value) {
        try {
            double seconds = Double.parseDouble(value);
            if (!(seconds >= 0) || seconds > Duration.ofDays(3650).toSeconds()) {
                throw new NumberFormatException();
            }
            return Duration.ofNanos((long) (seconds * 1e9));
        } catch (NumberFormatException e) {
            throw new MountException("mount option " + option + ": not a number of seconds between 0 and 10 years", e);
        }
    }

    /**
     * A FUSE file system can only lower the kernel's readahead (128 KiB by default) in its init reply;
     * raising it is root's business, through the mount's backing device. At 1 MiB a sequential reader's
     * requests are as large as a reply pipe holds: fewer trips through the shim. Best effort: other
     * users keep 128 KiB.
     */
    private void raiseKernelReadahead() {
        try {
            long dev = ((Number) Files.getAttribute(mountPoint, "unix:dev")).longValue();
            long major = ((dev >>> 8) & 0xfff) | ((dev >>> 32) & ~0xfffL);
            long minor = (dev & 0xff) | ((dev >>> 12) & ~0xffL);
            Path knob = Path.of("/sys/class/bdi/" + major + ":" + minor + "/read_ahead_kb");
            Files.writeString(knob, Integer.toString(KERNEL_READAHEAD_KB));
        } catch (IOException | RuntimeException e) {
            LOG.debug("kernel readahead of {} left at its default: {}", mountPoint, e.toString());
        }
    }

    /**
     * Blocks until the mount goes away (fusermount -u, umount, or {@link #unmount}); for a pre-opened
     * descriptor, whose mount point this process does not know, until the kernel ends the session.
     */
    public void awaitUnmount() throws InterruptedException {
        if (preOpened >= 0) {
            FuseSession serving = session;
            if (serving != null) {
                serving.join();
            }
            return;
        }
        MountTable.awaitUnmounted(mountPoint);
    }

    /** Unmounts if still mounted and ends the session. */
    public synchronized void unmount() {
        if (session == null) {
            return;
        }
        try {
            if (preOpened >= 0) {
                // the mounter unmounts; closing the descriptor ends the connection (ENOTCONN until then)
                session.close();
                session = null;
                return;
            }
            if (MountTable.isMountPoint(mountPoint)) {
                FuseMounter.unmount(mountPoint, uid);
            }
            // a lazy unmount with files still open leaves the connection up: the threads are daemons
            if (session.join(Duration.ofSeconds(5))) {
                session.close();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warn("unmount of {} did not finish cleanly: {}", mountPoint, e.toString());
        }
        session = null;
    }

    /** The mount could not be made. */
    public static final class MountException extends RuntimeException {
        MountException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
