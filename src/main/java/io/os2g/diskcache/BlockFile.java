package io.os2g.diskcache;

import io.os2g.PerThread;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Set;
import javax.crypto.Mac;

/**
 * One cached block on disk: a file holding exactly the block's bytes, so the kernel can read it for a
 * FUSE file as it is (passthrough), and its header in the extended attribute {@code user.os2g.block}
 * (magic, the data's length, its MAC, the SHA-256 of the key's canonical form). The MAC
 * ({@link BlockSigner}) covers the key's hash, the length and the data, so neither a damaged block nor
 * one planted or moved by someone without the cache's secret is served. Written whole, mode 0600, to a
 * temporary file and renamed into place, so a reader in any process sees a whole block or none; read
 * through {@link Reader}, which authenticates the data as it goes.
 */
final class BlockFile {

    /** The extended attribute holding the header ({@code user.} is the JDK's namespace for these). */
    static final String ATTRIBUTE = "os2g.block";
    private static final byte[] MAGIC = "os2gblk3".getBytes(StandardCharsets.US_ASCII);
    /** magic, data length, MAC, SHA-256 of the key. */
    private static final int HEADER = 8 + 8 + 32 + 32;

    private static final FileAttribute<?> OWNER_ONLY = PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));

    private BlockFile() {
    }

    /** A block that cannot be served: cut short, another key's, or its bytes not what were written. */
    static final class Corrupt extends IOException {
        Corrupt(String message) {
            super(message);
        }
    }

    /** Writes {@code data} (position to limit) as the block of {@code key} into {@code file}, which must not exist. */
    static void write(Path file, BlockKey key, ByteBuffer data, BlockSigner signer) throws IOException {
        byte[] keyHash = HexFormat.of().parseHex(key.fileName());
        byte[] check;
        try (PerThread.Lease<Mac> mac = start(signer, keyHash, data.remaining())) {
            mac.value().update(data.duplicate());
            check = mac.value().doFinal();
        }
        ByteBuffer header = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        header.put(MAGIC).putLong(data.remaining()).put(check).put(keyHash).flip();
        try (FileChannel out = FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS), OWNER_ONLY)) {
            ByteBuffer bytes = data.duplicate();
            while (bytes.hasRemaining()) {
                out.write(bytes);
            }
        }
        attributes(file).write(ATTRIBUTE, header);
    }

    /** A MAC begun over what names the block: its key's hash and its length. */
    private static PerThread.Lease<Mac> start(BlockSigner signer, byte[] keyHash, long length) {
        PerThread.Lease<Mac> mac = signer.mac();
        mac.value().update(keyHash);
        mac.value().update(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, length).array());
        return mac;
    }

    private static UserDefinedFileAttributeView attributes(Path file) {
        return Files.getFileAttributeView(file, UserDefinedFileAttributeView.class);
    }

    /**
     * Opens the block of {@code key} in {@code file} for reading its data.
     *
     * @throws NoSuchFileException when there is none
     * @throws Corrupt when the file is not a whole block of this key and length
     */
    static Reader open(Path file, BlockKey key, BlockSigner signer) throws IOException {
        FileChannel in = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
        try {
            ByteBuffer header = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
            try {
                attributes(file).read(ATTRIBUTE, header);
            } catch (NoSuchFileException e) {
                throw e; // swept between the open and here: a miss
            } catch (FileSystemException e) {
                throw new Corrupt("no block header (" + e.getReason() + ")");
            }
            if (header.position() != HEADER) {
                throw new Corrupt("not a block file");
            }
            byte[] magic = new byte[MAGIC.length];
            header.flip().get(magic);
            long dataLength = header.getLong();
            byte[] expected = new byte[32];
            header.get(expected);
            byte[] hash = new byte[32];
            header.get(hash);
            if (!Arrays.equals(magic, MAGIC)) {
                throw new Corrupt("not a block file");
            }
            if (!Arrays.equals(hash, HexFormat.of().parseHex(key.fileName())) || dataLength != key.length()) {
                throw new Corrupt("a block of another key");
            }
            BasicFileAttributes seen = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (seen.size() != dataLength) {
                throw new Corrupt("a block of " + seen.size() + " bytes where " + dataLength + " were written");
            }
            return new Reader(in, dataLength, start(signer, hash, dataLength), expected, seen.lastModifiedTime().toMillis());
        } catch (IOException | RuntimeException e) {
            in.close();
            throw e;
        }
    }

    /**
     * A block's data as a stream and a channel (a staging reservation reads a channel into native
     * memory), authenticated as it is read; {@link #verify} once it is all read.
     */
    static final class Reader extends InputStream implements ReadableByteChannel {
        private final FileChannel in;
        private final PerThread.Lease<Mac> lease;
        private final Mac mac;
        private final byte[] expected;
        private final long lastUsedMillis;
        private long left;

        private Reader(FileChannel in, long length, PerThread.Lease<Mac> mac, byte[] expected, long lastUsedMillis) {
            this.in = in;
            this.left = length;
            this.lease = mac;
            this.mac = mac.value();
            this.expected = expected;
            this.lastUsedMillis = lastUsedMillis;
        }

        /** When the block was last used (its modification time) as it was opened. */
        long lastUsedMillis() {
            return lastUsedMillis;
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
            mac.update(window.flip());
            target.position(target.position() + n);
            left -= n;
            return n;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            return read(ByteBuffer.wrap(b, off, len));
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        /** Reads the rest of the block through {@code scratch} (authenticating it), then {@link #verify}. */
        void readToEndAndVerify(ByteBuffer scratch) throws IOException {
            while (read(scratch.clear()) >= 0) {
                // authenticated as read
            }
            verify();
        }

        /** @throws Corrupt when not all was read, or the bytes are not those written */
        void verify() throws Corrupt {
            if (left != 0) {
                throw new Corrupt("a block not read to its end");
            }
            if (!MessageDigest.isEqual(mac.doFinal(), expected)) {
                throw new Corrupt("a block whose bytes or key are not those written with this cache's secret");
            }
        }

        @Override
        public boolean isOpen() {
            return in.isOpen();
        }

        /** Closes the file and gives the MAC back: nothing reads or verifies after this. */
        @Override
        public void close() throws IOException {
            lease.close();
            in.close();
        }
    }
}
