package io.os2g.fuse;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The kernel's view of what is mounted where ({@code /proc/self/mountinfo}), and a way to sleep until
 * it changes: poll(2) on mountinfo wakes with POLLPRI on every mount or unmount, so waiting for an
 * unmount costs no CPU.
 */
public final class MountTable {

    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");
    private static final short POLLPRI = 0x2;
    private static final short POLLERR = 0x8;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle OPEN = libc("open", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle POLL = libc("poll", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    private static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

    private MountTable() {
    }

    private static MethodHandle libc(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), descriptor);
    }

    /** Whether something is mounted exactly at {@code path}. */
    public static boolean isMountPoint(Path path) {
        return fsTypeAt(path) != null;
    }

    /** One line of mountinfo: the file system's device (major:minor), the root of it mounted, where, read-only or not, its type. */
    public record Entry(String device, String root, Path mountPoint, boolean readOnly, String fsType) {
    }

    /** What is mounted, in mount order; empty if mountinfo cannot be read. */
    public static List<Entry> entries() {
        List<Entry> entries = new java.util.ArrayList<>();
        try {
            for (String line : Files.readAllLines(MOUNTINFO)) {
                // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
                String[] f = line.split(" ");
                if (f.length > 4) {
                    int dash = line.indexOf(" - ");
                    String type = dash < 0 ? "?" : line.substring(dash + 3).split(" ")[0];
                    entries.add(new Entry(f[2], unescape(f[3]), Path.of(unescape(f[4])), List.of(f[5].split(",")).contains("ro"), type));
                }
            }
        } catch (IOException e) {
            return List.of();
        }
        return entries;
    }

    /** The file-system type mounted at {@code path} (the last one, if stacked), or null. */
    public static String fsTypeAt(Path path) {
        Entry last = entryAt(path);
        return last == null ? null : last.fsType();
    }

    /** The mount at {@code path} (the last one, if stacked), or null. */
    public static Entry entryAt(Path path) {
        Path wanted = path.toAbsolutePath().normalize();
        Entry last = null;
        for (Entry e : entries()) {
            if (e.mountPoint().equals(wanted)) {
                last = e;
            }
        }
        return last;
    }

    /** Blocks until nothing is mounted at {@code path} any more. */
    public static void awaitUnmounted(Path path) throws InterruptedException {
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(arena.allocateFrom(MOUNTINFO.toString()), 0 /* O_RDONLY */);
            if (fd < 0) {
                throw new IllegalStateException("cannot open " + MOUNTINFO);
            }
            try {
                MemorySegment pollfd = arena.allocate(8, 4);
                while (isMountPoint(path)) {
                    if (Thread.interrupted()) {
                        throw new InterruptedException();
                    }
                    pollfd.set(ValueLayout.JAVA_INT, 0, fd);
                    pollfd.set(ValueLayout.JAVA_SHORT, 4, (short) (POLLPRI | POLLERR));
                    pollfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
                    // a timeout only as a safety net: the mount table's event wakes it first
                    int ready = (int) POLL.invokeExact(pollfd, 1L, 60_000);
                    if (ready < 0) {
                        Thread.sleep(100); // EINTR
                    }
                }
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
        } catch (InterruptedException | RuntimeException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("waiting on " + MOUNTINFO + " failed", t);
        }
    }

    /** mountinfo escapes space, tab, newline and backslash as octal. */
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length()) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
