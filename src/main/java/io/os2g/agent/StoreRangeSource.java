package io.os2g.agent;

import io.os2g.codec.RangeSource;
import io.os2g.store.ObjectStore;
import java.io.EOFException;

/** The decoders' view of one object version: ranged reads through the store, pinned to its ETag. */
public final class StoreRangeSource {

    private StoreRangeSource() {
    }

    /** Reads of {@code key} at version {@code etag}; each is one ranged GET (retried by the store). */
    public static RangeSource of(ObjectStore store, String key, String etag) {
        return (position, target, offset, length) -> store.get(key, position, length, etag, in -> {
            if (in.readNBytes(target, offset, length) != length) {
                throw new EOFException("body ended before " + length + " bytes");
            }
        });
    }
}
