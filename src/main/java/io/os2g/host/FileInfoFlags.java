package io.os2g.host;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import org.cryptomator.jfuse.api.FileInfo;

/**
 * The open flags of {@code struct fuse_file_info} that jfuse's {@link FileInfo} does not expose,
 * written into the native struct behind jfuse's {@code FileInfoImpl} (libfuse 3, Linux x86_64: the
 * bit-field word after {@code flags}). Elsewhere nothing is set and callers fall back.
 */
final class FileInfoFlags {

    private static final long BITS = 4;
    private static final int DIRECT_IO = 1 << 1;
    private static final int KEEP_CACHE = 1 << 2;
    private static final long FILE_INFO_SIZE = 40;
    private static final MethodHandle SEGMENT = JfuseStructs.segmentAccessor("FileInfoImpl");

    private FileInfoFlags() {
    }

    static boolean supported() {
        return SEGMENT != null;
    }

    /** Reads bypass the page cache and may return any length, whatever getattr said. */
    static boolean setDirectIo(FileInfo fi) {
        return setBit(fi, DIRECT_IO);
    }

    /**
     * The kernel keeps the file's cached pages instead of dropping them at this open. It still drops
     * them when a later getattr shows a new mtime or size (libfuse 3 asks the kernel for that,
     * FUSE_CAP_AUTO_INVAL_DATA), so a new object version is never served from the old one's pages.
     */
    static boolean setKeepCache(FileInfo fi) {
        return setBit(fi, KEEP_CACHE);
    }

    private static boolean setBit(FileInfo fi, int bit) {
        if (SEGMENT == null) {
            return false;
        }
        try {
            MemorySegment segment = (MemorySegment) SEGMENT.invoke(fi);
            if (segment.byteSize() < FILE_INFO_SIZE) { // unbounded from jfuse: see StatFields
                return false;
            }
            segment.set(ValueLayout.JAVA_INT, BITS, segment.get(ValueLayout.JAVA_INT, BITS) | bit);
            return true;
        } catch (Throwable t) {
            return false;
        }
    }
}
