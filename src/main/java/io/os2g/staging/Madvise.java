package io.os2g.staging;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/** madvise(2) through FFM, for what {@code FileChannel.map} has no option for. */
final class Madvise {

    private static final int MADV_POPULATE_WRITE = 23;
    static final int EINVAL = 22;
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle MADVISE = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("madvise").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT),
            Linker.Option.captureCallState("errno"));

    private Madvise() {
    }

    /**
     * Populates the page tables of a mapped segment for writing. Returns 0, or the errno: EINVAL on a
     * kernel before 5.14 (no such advice), EFAULT or ENOMEM when the file system behind the mapping
     * has no room for the pages (a first touch would have been SIGBUS).
     */
    static int populateWrite(MemorySegment segment) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int rc = (int) MADVISE.invokeExact(state, segment, segment.byteSize(), MADV_POPULATE_WRITE);
            return rc == 0 ? 0 : (int) ERRNO.get(state, 0L);
        } catch (IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            return EINVAL;
        }
    }
}
