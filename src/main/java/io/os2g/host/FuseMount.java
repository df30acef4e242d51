package io.os2g.host;

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

    private final Path mountPoint;
    private final List<String> options;
    private Fuse fuse;

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
        try {
            fuse.mount("os2g", mountPoint, "-o", String.join(",", options));
        } catch (FuseMountFailedException | RuntimeException e) {
            fuse = null;
            throw new MountException("mount at " + mountPoint + " failed: " + e.getMessage(), e);
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
        } catch (TimeoutException | RuntimeException e) {
            LOG.warn("unmount of {} did not finish cleanly: {}", mountPoint, e.toString());
        }
        fuse = null;
    }

    /** The mount could not be made. */
    public static final class MountException extends RuntimeException {
        MountException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
