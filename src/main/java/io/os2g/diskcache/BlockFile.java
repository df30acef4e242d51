package io.os2g.diskcache;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * One cached block on disk: a header (magic, the key's canonical form, the data's length and CRC32C)
 * and the data. Written whole to a temporary file and renamed into place, so a reader in any process
 * sees a whole block or none; read through {@link Reader}, which checksums the data as it goes.
 */
final class BlockFile {

    private static final byte[] MAGIC = "os2gblk1".getBytes(StandardCharsets.US_ASCII);
    /** magic, key length, data length, data CRC32C. */
    private static final int FIXED = 8 + 4 + 8 + 4;
    private static final int MAX_KEY = 64 * 1024;

    private BlockFile() {
    }

    /** A block that cannot be served: cut short, another key's, or its bytes not what were written. */
    static final class Corrupt extends IOException {
        Corrupt(String message) {
            super(message);
        }
    }

    /** Writes {@code data} (position to limit) as the block of {@code key} into {@code file}, which must not exist. */
    static void write(Path file, BlockKey key, ByteBuffer data) throws IOException {
        byte[] canonical = key.canonical().getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(data.duplicate());
        ByteBuffer header = ByteBuffer.allocate(FIXED + canonical.length).order(ByteOrder.LITTLE_ENDIAN);
        header.put(MAGIC).putInt(canonical.length).putLong(data.remaining()).putInt((int) crc.getValue()).put(canonical).flip();
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer[] both = {header, data.duplicate()};
            long total = header.remaining() + (long) data.remaining();
            long written = 0;
            while (written < total) {
                written += out.write(both);
            }
        }
    }

    /**
     * Opens the block of {@code key} in {@code file} for reading its data.
     *
     * @throws java.nio.file.NoSuchFileException when there is none
     * @throws Corrupt when the file is not a whole block of this key and length
     */
    static Reader open(Path file, BlockKey key) throws IOException {
        FileChannel in = FileChannel.open(file, StandardOpenOption.READ);
        try {
            ByteBuffer fixed = ByteBuffer.allocate(FIXED).order(ByteOrder.LITTLE_ENDIAN);
            readFully(in, fixed, 0);
            byte[] magic = new byte[MAGIC.length];
            fixed.flip().get(magic);
            int keyLength = fixed.getInt();
            long dataLength = fixed.getLong();
            int crc = fixed.getInt();
            if (!Arrays.equals(magic, MAGIC) || keyLength < 0 || keyLength > MAX_KEY) {
                throw new Corrupt("not a block file");
            }
            ByteBuffer stored = ByteBuffer.allocate(keyLength);
            readFully(in, stored, FIXED);
            String storedKey = new String(stored.array(), StandardCharsets.UTF_8);
            if (!storedKey.equals(key.canonical()) || dataLength != key.length()) {
                throw new Corrupt("a block of another key");
            }
            long dataStart = FIXED + keyLength;
            if (in.size() != dataStart + dataLength) {
                throw new Corrupt("a block of " + (in.size() - dataStart) + " bytes where " + dataLength + " were written");
            }
            in.position(dataStart);
            return new Reader(in, dataLength, crc);
        } catch (IOException | RuntimeException e) {
            in.close();
            throw e;
        }
    }

    private static void readFully(FileChannel in, ByteBuffer target, long position) throws IOException {
        while (target.hasRemaining()) {
            if (in.read(target, position + target.position()) < 0) {
                throw new Corrupt("a block cut short");
            }
        }
    }

    /**
     * A block's data as a stream and a channel (a staging reservation reads a channel into native
     * memory), checksummed as it is read; {@link #verify} once it is all read.
     */
    static final class Reader extends InputStream implements ReadableByteChannel {
        private final FileChannel in;
        private final CRC32C crc = new CRC32C();
        private final int expected;
        private long left;

        private Reader(FileChannel in, long length, int expected) {
            this.in = in;
            this.left = length;
            this.expected = expected;
        }

        @Override
        public int read(ByteBuffer target) throws IOException {
            if (left == 0) {
                return -1;
            }
            ByteBuffer window = target.slice();
            if (window.remaining() > left) {
                window.limit((int) left);
            }
            int n = in.read(window);
            if (n < 0) {
                throw new Corrupt("a block cut short");
            }
            crc.update(window.flip());
            target.position(target.position() + n);
            left -= n;
            return n;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            int n = read(ByteBuffer.wrap(b, off, len));
            return n;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        /** @throws Corrupt when not all was read, or the bytes are not those written */
        void verify() throws Corrupt {
            if (left != 0 || (int) crc.getValue() != expected) {
                throw new Corrupt(left != 0 ? "a block not read to its end" : "a block whose checksum does not match");
            }
        }

        @Override
        public boolean isOpen() {
            return in.isOpen();
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
