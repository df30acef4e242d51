package io.os2g.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Random;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class CompressionTest {

    static byte[] text(int length, int seed) {
        // compressible, not trivially: words from a small random alphabet
        Random random = new Random(seed);
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i % 9 == 8 ? ' ' : 'a' + random.nextInt(8));
        }
        return b;
    }

    static byte[] gzip(byte[] body) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
            gz.write(body);
        }
        return out.toByteArray();
    }

    /** A zstd stream written without knowing its length: no frame content size. */
    static byte[] zstdStreamed(byte[] body) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ZstdOutputStream z = new ZstdOutputStream(out)) {
            z.write(body);
        }
        return out.toByteArray();
    }

    private static RangeSource over(byte[] bytes) {
        return (position, target, offset, length) -> System.arraycopy(bytes, (int) position, target, offset, length);
    }

    private static byte[] decode(Compression c, byte[] compressed) throws IOException {
        try (InputStream in = c.decoder(new RangeInputStream(over(compressed), compressed.length, 1000, Runnable::run))) {
            return in.readAllBytes();
        }
    }

    @Test
    void formatsAreKnownByTheirSuffix() {
        assertEquals(Compression.GZIP, Compression.of("a/b.csv.gz"));
        assertEquals(Compression.ZSTD, Compression.of("a/b.npy.zst"));
        assertNull(Compression.of("a/b.tar"));
    }

    @Test
    void theStatedSizeComesFromTheZstdFrameOrTheGzipTrailer() throws IOException {
        byte[] body = text(300_000, 1);
        byte[] zst = Zstd.compress(body);
        assertEquals(body.length, Compression.ZSTD.statedSize(over(zst), zst.length));
        byte[] streamed = zstdStreamed(body);
        assertEquals(-1, Compression.ZSTD.statedSize(over(streamed), streamed.length), "no content size in the frame");
        byte[] gz = gzip(body);
        assertEquals(body.length, Compression.GZIP.statedSize(over(gz), gz.length));
    }

    @Test
    void decodersReturnTheBytesAcrossWindowsFramesAndMembers() throws IOException {
        byte[] a = text(150_000, 2);
        byte[] b = text(70_000, 3);
        byte[] both = new byte[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        assertArrayEquals(both, decode(Compression.ZSTD, concat(Zstd.compress(a), zstdStreamed(b))));
        assertArrayEquals(both, decode(Compression.GZIP, concat(gzip(a), gzip(b))));
    }

    @Test
    void corruptInputFailsTheDecode() throws IOException {
        byte[] gz = gzip(text(100_000, 4));
        for (int i = 200; i < 400; i++) {
            gz[i] ^= 0x5a;
        }
        assertThrows(IOException.class, () -> decode(Compression.GZIP, gz));
        // with a content checksum, as the zstd command writes by default (without one, corrupt literals decode)
        ByteArrayOutputStream checked = new ByteArrayOutputStream();
        try (ZstdOutputStream z = new ZstdOutputStream(checked)) {
            z.setChecksum(true);
            z.write(text(100_000, 5));
        }
        byte[] zst = checked.toByteArray();
        for (int i = 100; i < 300; i++) {
            zst[i] ^= 0x5a;
        }
        assertThrows(IOException.class, () -> decode(Compression.ZSTD, zst));
    }

    @Test
    void aRangeStreamReadsTheWholeObjectInWindows() throws IOException {
        byte[] body = text(10_001, 6);
        int[] reads = new int[1];
        RangeSource counting = (position, target, offset, length) -> {
            reads[0]++;
            System.arraycopy(body, (int) position, target, offset, length);
        };
        assertArrayEquals(body, new RangeInputStream(counting, body.length, 1000, Runnable::run).readAllBytes());
        assertEquals(11, reads[0]);
        assertArrayEquals(new byte[0], new RangeInputStream(counting, 0, 1000, Runnable::run).readAllBytes());
    }

    static byte[] concat(byte[] x, byte[] y) {
        byte[] out = new byte[x.length + y.length];
        System.arraycopy(x, 0, out, 0, x.length);
        System.arraycopy(y, 0, out, x.length, y.length);
        return out;
    }

}
