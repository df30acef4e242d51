package io.os2g.fuse;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Makes and removes a FUSE mount and hands back its /dev/fuse descriptor: as root with mount(2)
 * directly; as another user through fusermount3 (setuid root), which mounts and sends the descriptor
 * back over a socket named in {@code _FUSE_COMMFD}, as libfuse does.
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
        String all = withMaxRead(options, PipedReply.largestRead(Native.pageSize()));
        return uid == 0 ? mountAsRoot(mountPoint, source, subtype, all, uid, gid)
                : mountThroughFusermount(mountPoint, source, subtype, all);
    }

    /**
     * {@code options} with max_read at most {@code largest}: a kernel that cannot be told max_pages in
     * INIT (before 7.28) sends READs of 32 pages, 2 MiB with 64 KiB pages, more than a reply pipe holds.
     */
    static String withMaxRead(String options, int largest) {
        List<String> kept = new ArrayList<>();
        int maxRead = largest;
        for (String option : options.isEmpty() ? List.<String>of() : List.of(options.split(","))) {
            if (option.startsWith("max_read=")) {
                maxRead = Math.min(largest, Integer.parseInt(option.substring("max_read=".length())));
            } else {
                kept.add(option);
            }
        }
        kept.add("max_read=" + maxRead);
        return String.join(",", kept);
    }

    static int mountThroughFusermount(Path mountPoint, String source, String subtype, String options) {
        int[] pair = Native.socketpair();
        if (pair == null) {
            throw new IllegalStateException("socketpair failed: errno " + Native.errno());
        }
        try {
            String all = "nosuid,nodev,fsname=" + source + ",subtype=" + subtype + (options.isEmpty() ? "" : "," + options);
            List<String> env = new ArrayList<>();
            System.getenv().forEach((k, v) -> env.add(k + "=" + v));
            env.add("_FUSE_COMMFD=" + pair[0]);
            int status = Native.spawnAndWait(List.of("fusermount3", "-o", all, "--", mountPoint.toString()), env);
            Native.close(pair[0]);
            pair[0] = -1;
            int fd = status == 0 ? Native.receiveDescriptor(pair[1]) : -1;
            if (fd < 0) {
                throw new IllegalStateException("fusermount3 could not mount " + mountPoint + " (exit status " + status + ")");
            }
            return fd;
        } finally {
            if (pair[0] >= 0) {
                Native.close(pair[0]);
            }
            Native.close(pair[1]);
        }
    }

    static int mountAsRoot(Path mountPoint, String source, String subtype, String options, int uid, int gid) {
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
    public static void unmount(Path mountPoint, int uid) {
        if (uid != 0) {
            int status = Native.spawnAndWait(List.of("fusermount3", "-u", "-z", "--", mountPoint.toString()), List.of());
            if (status != 0) {
                throw new IllegalStateException("fusermount3 -u " + mountPoint + " failed (exit status " + status + ")");
            }
        } else if (Native.umount2(mountPoint.toString(), MNT_DETACH) != 0) {
            throw new IllegalStateException("unmount of " + mountPoint + " failed: errno " + Native.errno());
        }
    }
}
