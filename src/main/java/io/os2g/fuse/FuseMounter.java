package io.os2g.fuse;

import java.nio.file.Path;

/**
 * Makes and removes a FUSE mount and hands back its /dev/fuse descriptor. As root, with mount(2)
 * directly (what fusermount3 does on a user's behalf).
 */
public final class FuseMounter {

    private static final long MS_NOSUID = 2;
    private static final long MS_NODEV = 4;
    private static final int MNT_DETACH = 2;

    private FuseMounter() {
    }

    /**
     * Mounts a FUSE file system of type {@code fuse.SUBTYPE} named {@code source} at {@code mountPoint}
     * and returns the /dev/fuse descriptor its requests arrive on.
     *
     * @param options the kernel's FUSE options beyond the descriptor and root mode, e.g. {@code allow_other,default_permissions}
     */
    public static int mount(Path mountPoint, String source, String subtype, String options, int uid, int gid) {
        int fd = Native.open("/dev/fuse", Native.O_RDWR | Native.O_CLOEXEC);
        if (fd < 0) {
            throw new IllegalStateException("cannot open /dev/fuse: errno " + Native.errno());
        }
        String data = "fd=" + fd + ",rootmode=40000,user_id=" + uid + ",group_id=" + gid
                + (options.isEmpty() ? "" : "," + options);
        if (Native.mount(source, mountPoint.toString(), "fuse." + subtype, MS_NOSUID | MS_NODEV, data) != 0) {
            int errno = Native.errno();
            Native.close(fd);
            throw new IllegalStateException("mount at " + mountPoint + " failed: errno " + errno);
        }
        return fd;
    }

    /** Detaches the mount; its session's threads then read ENODEV and end. */
    public static void unmount(Path mountPoint) {
        if (Native.umount2(mountPoint.toString(), MNT_DETACH) != 0) {
            throw new IllegalStateException("unmount of " + mountPoint + " failed: errno " + Native.errno());
        }
    }
}
