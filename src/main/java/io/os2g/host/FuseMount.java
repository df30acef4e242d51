package io.os2g.host;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One kernel mount of an {@link Os2gFileSystem}: the libfuse loop on its own thread, started and
 * stopped here. {@link #start} returns once the mount shows in the mount table, which is the moment
 * it answers.
 */
public final class FuseMount {

    private static final Logger LOG = LoggerFactory.getLogger(FuseMount.class);

    private final Os2gFileSystem fs;
    private final Path mountPoint;
    private final List<String> options;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private Thread loop;

    /**
     * @param options libfuse options, e.g. {@code ro,fsname=bucket,attr_timeout=300}
     */
    public FuseMount(Os2gFileSystem fs, Path mountPoint, List<String> options) {
        this.fs = fs;
        this.mountPoint = mountPoint.toAbsolutePath().normalize();
        this.options = List.copyOf(options);
    }

    public Path mountPoint() {
        return mountPoint;
    }

    /** Mounts and waits until the kernel lists the mount; fails if libfuse gives up first. */
    public void start(Duration timeout) {
        String[] args = {"-o", String.join(",", options)};
        loop = Thread.ofPlatform().name("fuse-loop").daemon(true).start(() -> {
            try {
                fs.mount(mountPoint, true, false, args);
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!MountTable.isMountPoint(mountPoint) || !"fuse".equals(MountTable.fsTypeAt(mountPoint).split("\\.")[0])) {
            if (!loop.isAlive()) {
                Throwable t = failure.get();
                throw new MountException("mount at " + mountPoint + " failed" + (t == null ? "" : ": " + t.getMessage()), t);
            }
            if (System.nanoTime() > deadline) {
                unmount();
                throw new MountException("mount at " + mountPoint + " did not appear within " + timeout.toSeconds() + " s", null);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new MountException("interrupted while mounting", e);
            }
        }
    }

    /** Blocks until the mount goes away (fusermount -u, umount, or {@link #unmount}). */
    public void awaitUnmount() throws InterruptedException {
        loop.join();
    }

    public boolean isRunning() {
        return loop != null && loop.isAlive();
    }

    /** Unmounts (lazily, so a busy mount still goes) and waits for the FUSE loop to end. */
    public void unmount() {
        if (loop == null) {
            return;
        }
        if (MountTable.isMountPoint(mountPoint)) {
            fs.umount();
        }
        try {
            loop.join(Duration.ofSeconds(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (loop.isAlive()) {
            LOG.warn("FUSE loop for {} still running after unmount", mountPoint);
        }
    }

    /** The mount could not be made. */
    public static final class MountException extends RuntimeException {
        MountException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
