package io.os2g.codec;

import java.io.IOException;

/** Random access to the bytes of one object version. */
@FunctionalInterface
public interface RangeSource {

    /**
     * Reads {@code length} bytes from {@code position} into {@code target} from {@code offset}; the range
     * lies within the object.
     */
    void read(long position, byte[] target, int offset, int length) throws IOException;
}
