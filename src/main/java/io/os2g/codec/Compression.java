package io.os2g.codec;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdInputStreamNoFinalizer;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.zip.GZIPInputStream;

/**
 * The compressed formats shown decompressed ({@code --decompress}): how to decode a stream, and the
 * decompressed size the format states without decoding it.
 */
public enum Compression {
    /** gzip (RFC 1952); concatenated members decode as one stream. */
    GZIP(".gz") {
        @Override
        public InputStream decoder(InputStream compressed) throws IOException {
            return new GZIPInputStream(compressed, BUFFER);
        }

        @Override
        public long statedSize(RangeSource source, long compressedSize) throws IOException {
            // ISIZE, the last 4 bytes: the size modulo 2^32, so only an object under 4 GiB can be sized by it
            if (compressedSize < 18 || compressedSize >= (1L << 32)) {
                return -1;
            }
            byte[] tail = new byte[4];
            source.read(compressedSize - 4, tail, 0, 4);
            return (tail[0] & 0xffL) | (tail[1] & 0xffL) << 8 | (tail[2] & 0xffL) << 16 | (tail[3] & 0xffL) << 24;
        }
    },
    /** Zstandard; several frames decode as one stream. */
    ZSTD(".zst") {
        @Override
        public InputStream decoder(InputStream compressed) throws IOException {
            return new BufferedInputStream(new ZstdInputStreamNoFinalizer(compressed), BUFFER);
        }

        @Override
        public long statedSize(RangeSource source, long compressedSize) throws IOException {
            // the first frame's header: magic, descriptor, window, dictionary id, content size (at most 18 bytes)
            byte[] head = new byte[(int) Math.min(18, compressedSize)];
            source.read(0, head, 0, head.length);
            long size = Zstd.getFrameContentSize(head);
            return size >= 0 ? size : -1;
        }
    };

    private static final int BUFFER = 64 * 1024;

    private final String suffix;

    Compression(String suffix) {
        this.suffix = suffix;
    }

    /** The name ending of objects in this format, with its dot. */
    public String suffix() {
        return suffix;
    }

    /** The format of {@code key} by its name ending, or null. */
    public static Compression of(String key) {
        for (Compression c : values()) {
            if (key.endsWith(c.suffix)) {
                return c;
            }
        }
        return null;
    }

    /** A stream of the decompressed bytes of {@code compressed}; a malformed input fails with {@link IOException}. */
    public abstract InputStream decoder(InputStream compressed) throws IOException;

    /**
     * The decompressed size the object states (zstd: the first frame's content size; gzip: the trailer's
     * ISIZE), read with one small ranged read, or -1 if it states none. A multi-frame zstd or multi-member
     * gzip object states only part of its size: the decoder finds that out (see the agent's check at the end).
     */
    public abstract long statedSize(RangeSource source, long compressedSize) throws IOException;
}
