package io.os2g.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeoutException;
import org.cryptomator.jfuse.api.Errno;
import org.cryptomator.jfuse.api.Fuse;
import org.cryptomator.jfuse.api.FuseBuilder;
import org.cryptomator.jfuse.api.FuseMountFailedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One kernel mount of an {@link Os2gFileSystem} through libfuse 3 (jfuse, FFM). {@link #start} returns
 * once the mount answers; {@link #awaitUnmount} sleeps until it goes away, however it goes.
 */
public final class FuseMount {

    private static final Logger LOG = LoggerFactory.getLogger(FuseMount.class);
    private static final int KERNEL_READAHEAD_KB = 1024;

    private final Path mountPoint;
    private final List<String> options;
    private Fuse fuse;
    private SplicedReads splicedReads;

    /**
     * @param options libfuse options, e.g. {@code ro,fsname=bucket,attr_timeout=300}
     */
    public FuseMount(Path mountPoint, List<String> options) {
        this.mountPoint = mountPoint.toAbsolutePath().normalize();
        this.options = List.copyOf(options);
    }

    /** The errno numbers of this platform's libfuse, which the file system needs before mounting. */
    public static Errno errnos() {
        return builder().errno();
    }

    private static FuseBuilder builder() {
        FuseBuilder builder = Fuse.builder();
        LibFuse.find().ifPresent(p -> builder.setLibraryPath(p.toString()));
        return builder;
    }

    public Path mountPoint() {
        return mountPoint;
    }

    /** Mounts and waits until the kernel answers on the mount point. */
    public void start(Os2gFileSystem fs) {
        fuse = builder().build(fs);
        splicedReads = SplicedReads.install(fuse, fs);
        try {
            fuse.mount("os2g", mountPoint, "-o", String.join(",", options));
        } catch (FuseMountFailedException | RuntimeException e) {
            fuse = null;
            closeSplicedReads();
            throw new MountException("mount at " + mountPoint + " failed: " + e.getMessage(), e);
        }
        raiseKernelReadahead();
    }

    /**
     * A FUSE file system can only lower the kernel's readahead (128 KiB by default) in its init reply;
     * raising it is root's business, through the mount's backing device. At 1 MiB a sequential reader's
     * requests are 1 MiB each: 8x fewer trips through the shim. Best effort: other users keep 128 KiB.
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

    /** Blocks until the mount goes away (fusermount -u, umount, or {@link #unmount}). */
    public void awaitUnmount() throws InterruptedException {
        MountTable.awaitUnmounted(mountPoint);
    }

    /** Unmounts if still mounted and ends the FUSE loop. */
    public synchronized void unmount() {
        if (fuse == null) {
            return;
        }
        try {
            fuse.close();
            closeSplicedReads();
        } catch (TimeoutException | RuntimeException e) {
            // a FUSE thread may still be in an upcall: its stub and pipes stay until the process ends
            LOG.warn("unmount of {} did not finish cleanly: {}", mountPoint, e.toString());
        }
        fuse = null;
    }

    private void closeSplicedReads() {
        if (splicedReads != null) {
            splicedReads.close();
            splicedReads = null;
        }
    }

    /** The mount could not be made. */
    public static final class MountException extends RuntimeException {
        MountException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
