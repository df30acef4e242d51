package io.os2g.staging;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/** madvise(2) through FFM, for what {@code FileChannel.map} has no option for. */
final class Madvise {

    private static final int MADV_POPULATE_WRITE = 23;
    private static final MethodHandle MADVISE = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("madvise").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));

    private Madvise() {
    }

    /** Populates the page tables of a mapped segment for writing; false if the kernel cannot. */
    static boolean populateWrite(MemorySegment segment) {
        try {
            return (int) MADVISE.invokeExact(segment, segment.byteSize(), MADV_POPULATE_WRITE) == 0;
        } catch (IllegalStateException e) {
            throw e;
        } catch (Throwable t) {
            return false;
        }
    }
}
