package io.os2g.host;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A pipe that carries one read's staged bytes, by page reference, from the staging segments to
 * libfuse, which splices them on to /dev/fuse. Sized to hold the largest read the kernel sends, so that
 * filling it never blocks. Not thread-safe: one FUSE thread uses it, one read at a time.
 */
final class ReplyPipe implements AutoCloseable {

    private static final int O_CLOEXEC = 0x80000;
    private static final int F_SETPIPE_SZ = 1031;
    private static final int F_GETPIPE_SZ = 1032;
    private static final long FIONREAD = 0x541B;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle PIPE2 = libc("pipe2", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle FCNTL = LINKER.downcallHandle(LINKER.defaultLookup().find("fcntl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle IOCTL = LINKER.downcallHandle(LINKER.defaultLookup().find("ioctl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS),
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    /** /proc/sys/fs/pipe-max-size: the most an unprivileged process may ask for. */
    private static final int PIPE_MAX_SIZE = pipeMaxSize();

    private final int readEnd;
    private final int writeEnd;
    private final int capacity;
    private final MemorySegment count = Arena.ofAuto().allocate(ValueLayout.JAVA_INT);

    private ReplyPipe(int readEnd, int writeEnd, int capacity) {
        this.readEnd = readEnd;
        this.writeEnd = writeEnd;
        this.capacity = capacity;
    }

    /**
     * A pipe of at least {@code wanted} bytes if the kernel allows it (above /proc/sys/fs/pipe-max-size
     * only with CAP_SYS_RESOURCE), else of the most it allows; null when no pipe can be made (out of
     * descriptors).
     */
    static ReplyPipe open(int wanted) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fds = arena.allocate(ValueLayout.JAVA_INT, 2);
            if ((int) PIPE2.invokeExact(fds, O_CLOEXEC) != 0) {
                return null;
            }
            int readEnd = fds.getAtIndex(ValueLayout.JAVA_INT, 0);
            int writeEnd = fds.getAtIndex(ValueLayout.JAVA_INT, 1);
            if ((int) FCNTL.invokeExact(writeEnd, F_SETPIPE_SZ, wanted) < 0) {
                int ignored = (int) FCNTL.invokeExact(writeEnd, F_SETPIPE_SZ, PIPE_MAX_SIZE);
            }
            return new ReplyPipe(readEnd, writeEnd, (int) FCNTL.invokeExact(writeEnd, F_GETPIPE_SZ, 0));
        } catch (Throwable t) {
            throw new IllegalStateException("pipe2 failed", t);
        }
    }

    int readEnd() {
        return readEnd;
    }

    int writeEnd() {
        return writeEnd;
    }

    /** Bytes the pipe holds when full of whole pages. */
    int capacity() {
        return capacity;
    }

    /** Bytes waiting in the pipe: 0 once libfuse has taken a reply's bytes, as it always should. */
    int pending() {
        try {
            return (int) IOCTL.invokeExact(readEnd, FIONREAD, count) < 0 ? -1 : count.get(ValueLayout.JAVA_INT, 0);
        } catch (Throwable t) {
            return -1;
        }
    }

    @Override
    public void close() {
        try {
            int a = (int) CLOSE.invokeExact(readEnd);
            int b = (int) CLOSE.invokeExact(writeEnd);
        } catch (Throwable ignored) {
            // nothing to do: the descriptors go with the process at worst
        }
    }

    private static MethodHandle libc(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), descriptor);
    }

    private static int pipeMaxSize() {
        try {
            // a sysctl file answers a first read of 1 byte (Files.readString's) with 1 byte and then EOF
            return Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/fs/pipe-max-size")).getFirst().trim());
        } catch (IOException | RuntimeException e) {
            return 1 << 20;
        }
    }
}
