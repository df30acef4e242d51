package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** A pipe for the staging tests (pipe2, F_SETPIPE_SZ, read through FFM): what a spliced read fills. */
final class TestPipe implements AutoCloseable {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle PIPE2 = LINKER.downcallHandle(LINKER.defaultLookup().find("pipe2").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle FCNTL = LINKER.downcallHandle(LINKER.defaultLookup().find("fcntl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            Linker.Option.firstVariadicArg(2));
    private static final MethodHandle READ = LINKER.downcallHandle(LINKER.defaultLookup().find("read").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().find("close").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

    private final int readEnd;
    private final int writeEnd;

    TestPipe(int bytes) throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fds = arena.allocate(ValueLayout.JAVA_INT, 2);
            assertEquals(0, (int) PIPE2.invokeExact(fds, 0x80000));
            readEnd = fds.getAtIndex(ValueLayout.JAVA_INT, 0);
            writeEnd = fds.getAtIndex(ValueLayout.JAVA_INT, 1);
            assertTrue((int) FCNTL.invokeExact(writeEnd, 1031, bytes) >= bytes, "F_SETPIPE_SZ");
        } catch (Error | Exception e) {
            throw e;
        } catch (Throwable t) {
            throw new Exception(t);
        }
    }

    int writeEnd() {
        return writeEnd;
    }

    void readFully(MemorySegment target, long length) throws Exception {
        try {
            for (long done = 0; done < length; ) {
                long n = (long) READ.invokeExact(readEnd, target.asSlice(done), length - done);
                assertTrue(n > 0, "the pipe ended early");
                done += n;
            }
        } catch (Error | Exception e) {
            throw e;
        } catch (Throwable t) {
            throw new Exception(t);
        }
    }

    @Override
    public void close() throws Exception {
        try {
            int a = (int) CLOSE.invokeExact(readEnd);
            int b = (int) CLOSE.invokeExact(writeEnd);
        } catch (Throwable t) {
            throw new Exception(t);
        }
    }
}
