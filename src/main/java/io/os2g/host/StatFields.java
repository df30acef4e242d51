package io.os2g.host;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import org.cryptomator.jfuse.api.Stat;

/**
 * The fields of {@code struct stat} that jfuse's {@link Stat} does not expose: {@code st_blksize} and
 * {@code st_blocks}, which tools rely on ({@code du}; tar and cp take a file with no blocks for sparse).
 * ({@code st_ino} is libfuse 3's own node id: its high-level API takes no inode from the file system
 * unless {@code use_ino} is set in init, which jfuse does not expose.) They are written into the native struct behind jfuse's
 * {@code StatImpl} at the offsets of the Linux x86_64 layout; on any other platform they stay 0.
 */
final class StatFields {

    private static final long ST_BLKSIZE = 56;
    private static final long ST_BLOCKS = 64;
    private static final long STAT_SIZE = 144;

    private static final MethodHandle SEGMENT = JfuseStructs.segmentAccessor("StatImpl");

    private StatFields() {
    }

    static boolean supported() {
        return SEGMENT != null;
    }

    static void set(Stat stat, long blockSize, long blocks512) {
        if (SEGMENT == null) {
            return;
        }
        MemorySegment segment;
        try {
            segment = (MemorySegment) SEGMENT.invoke(stat);
        } catch (Throwable t) {
            return;
        }
        // jfuse's pointers are unbounded (jextract's C_POINTER), so no reinterpret: a restricted method
        // whose caller check walks the stack, half of getattr's CPU when it was called here
        if (segment.byteSize() < STAT_SIZE) {
            return;
        }
        segment.set(ValueLayout.JAVA_LONG_UNALIGNED, ST_BLKSIZE, blockSize);
        segment.set(ValueLayout.JAVA_LONG_UNALIGNED, ST_BLOCKS, blocks512);
    }
}
