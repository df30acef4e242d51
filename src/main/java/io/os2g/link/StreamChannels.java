package io.os2g.link;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/**
 * Channels over a TLS socket's streams for the bulk bytes of posts and parts. A heap buffer goes to
 * the stream whole and native memory (staging pages) through a buffer of {@link #BUFFER} bytes, so the
 * socket seals full TLS records (the channels of {@code java.nio.channels.Channels} move 8 KiB a call:
 * half-size records, and a copy more per byte).
 */
final class StreamChannels {

    static final int BUFFER = 256 << 10;

    private StreamChannels() {
    }

    /** Reads from {@code in}; one thread at a time. */
    static ReadableByteChannel readable(InputStream in) {
        return new Reader(in);
    }

    /** Writes to {@code out}; callers hold the link's write lock. */
    static WritableByteChannel writable(OutputStream out) {
        return new Writer(out);
    }

    /** What both directions share: a buffer for native memory, taken when first needed, and being open. */
    private abstract static class Buffered implements java.nio.channels.Channel {
        private byte[] buffer;
        private boolean open = true;

        final byte[] buffer() {
            if (buffer == null) {
                buffer = new byte[BUFFER];
            }
            return buffer;
        }

        @Override
        public final boolean isOpen() {
            return open;
        }

        @Override
        public final void close() {
            open = false;
        }
    }

    private static final class Reader extends Buffered implements ReadableByteChannel {
        private final InputStream in;

        Reader(InputStream in) {
            this.in = in;
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            if (!dst.hasRemaining()) {
                return 0;
            }
            if (dst.hasArray()) {
                int n = in.read(dst.array(), dst.arrayOffset() + dst.position(), dst.remaining());
                if (n > 0) {
                    dst.position(dst.position() + n);
                }
                return n;
            }
            byte[] buffer = buffer();
            int n = in.read(buffer, 0, Math.min(buffer.length, dst.remaining()));
            if (n > 0) {
                dst.put(buffer, 0, n);
            }
            return n;
        }
    }

    private static final class Writer extends Buffered implements WritableByteChannel {
        private final OutputStream out;

        Writer(OutputStream out) {
            this.out = out;
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            int n = src.remaining();
            if (src.hasArray()) {
                out.write(src.array(), src.arrayOffset() + src.position(), n);
                src.position(src.limit());
                return n;
            }
            byte[] buffer = buffer();
            while (src.hasRemaining()) {
                int k = Math.min(buffer.length, src.remaining());
                src.get(buffer, 0, k);
                out.write(buffer, 0, k);
            }
            return n;
        }
    }
}
