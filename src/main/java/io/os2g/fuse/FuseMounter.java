package io.os2g.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Makes and removes a FUSE mount and hands back its /dev/fuse descriptor: as root with mount(2)
 * directly; as another user through fusermount3 (setuid root), which mounts and sends the descriptor
 * back over a socket named in {@code _FUSE_COMMFD}, as libfuse does. A mount made by another process
 * arrives as its descriptor: {@code /dev/fd/N} as the mount point ({@link #preOpened}).
 */
public final class FuseMounter {

    private static final String SUBTYPE = "os2g";
    /** The type of a mount made for another process to serve ({@link #mountForAnother}). */
    public static final String TYPE = "fuse." + SUBTYPE;
    private static final long MS_NOSUID = 2;
    private static final long MS_NODEV = 4;
    private static final long MS_RDONLY = 1;
    private static final long MS_REMOUNT = 32;
    private static final int MNT_DETACH = 2;

    private static final Pattern DESCRIPTOR = Pattern.compile("/dev/fd/(\\d{1,9})");

    private FuseMounter() {
    }

    /**
     * The descriptor {@code N} when {@code mountPoint} is {@code /dev/fd/N}: a mount another process made
     * (a Kubernetes CSI plugin, with mount(2) and {@code fd=N}) and passed on open, so that this process
     * serves it without the privilege to mount. Empty for any other path.
     *
     * @throws IllegalArgumentException when N is not an open /dev/fuse descriptor of this process
     */
    public static OptionalInt preOpened(Path mountPoint) {
        Matcher m = DESCRIPTOR.matcher(mountPoint.toString());
        if (!m.matches()) {
            return OptionalInt.empty();
        }
        int fd = Integer.parseInt(m.group(1));
        Path link = Path.of("/proc/self/fd", Integer.toString(fd));
        String target;
        try {
            target = Files.readSymbolicLink(link).toString();
        } catch (IOException e) {
            throw new IllegalArgumentException(mountPoint + " is not an open descriptor of this process");
        }
        if (!target.equals("/dev/fuse")) {
            throw new IllegalArgumentException(mountPoint + " is " + target + ", not a /dev/fuse descriptor");
        }
        return OptionalInt.of(fd);
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

    /**
     * Mounts as root (mount(2), fd=N) for another process to serve: it gets the descriptor as
     * {@code /dev/fd/N} ({@link #preOpened}). Any user may enter; the kernel checks file modes.
     *
     * @throws IllegalStateException when /dev/fuse cannot be opened or the mount is refused
     */
    public static int mountForAnother(Path mountPoint, String source, boolean readOnly) {
        String options = withMaxRead("allow_other,default_permissions", PipedReply.largestRead(Native.pageSize()));
        int fd = mountAsRoot(mountPoint, source, SUBTYPE, options, 0, 0);
        if (readOnly) {
            // the mount itself read-only too, so that no bind of it can be made writable
            if (Native.mount("none", mountPoint.toString(), null, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, null) != 0) {
                int errno = Native.errno();
                unmount(mountPoint, 0);
                Native.close(fd);
                throw new IllegalStateException("read-only remount of " + mountPoint + " failed: errno " + errno);
            }
        }
        return fd;
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
