package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.luben.zstd.Zstd;
import io.os2g.store.ObjectSummary;
import io.os2g.store.StoreException;
import io.os2g.support.S3Fixture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.zip.GZIPOutputStream;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Compressed objects shown decompressed, against a real S3 server. */
@Tag("s3")
class DecompressedStoreTest {

    private static final int CHUNK = 64 * 1024;

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    private S3Fixture s3;
    private final byte[] body = text(300_000, 1);

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
    }

    private static byte[] text(int length, int seed) {
        Random random = new Random(seed);
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i % 9 == 8 ? '\n' : 'a' + random.nextInt(8));
        }
        return b;
    }

    private static byte[] gzip(byte[] plain) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
            gz.write(plain);
        }
        return out.toByteArray();
    }

    private static byte[] zstdWithoutSize(byte[] plain) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (var z = new com.github.luben.zstd.ZstdOutputStream(out)) {
            z.write(plain);
        }
        return out.toByteArray();
    }

    private static Map<String, ObjectSummary> byKey(List<ObjectSummary> objects) {
        return objects.stream().collect(Collectors.toMap(ObjectSummary::key, o -> o));
    }

    private static byte[] read(DecompressedStore store, ObjectSummary file, long offset, int length) {
        byte[] got = new byte[length];
        store.get(file.key(), offset, length, file.etag(), in -> {
            if (in.readNBytes(got, 0, length) != length) {
                throw new java.io.EOFException();
            }
        });
        return got;
    }

    private static byte[] slice(byte[] b, int from, int length) {
        return Arrays.copyOfRange(b, from, from + length);
    }

    @Test
    void gzAndZstObjectsAreAlsoListedWithTheirExactDecompressedSizes() throws Exception {
        s3.put("data", "d/a.txt.gz", gzip(body)).put("data", "d/b.bin.zst", Zstd.compress(body))
                .put("data", "d/c.bin.zst", zstdWithoutSize(body))
                .put("data", "d/e.bin.zst", zstdWithoutSize(body), Map.of("uncompressed-size", "300000"))
                .put("data", "d/taken.gz", gzip(body)).put("data", "d/taken", new byte[3]);
        try (DecompressedStore store = new DecompressedStore(s3.store("data"))) {
            Map<String, ObjectSummary> listed = byKey(store.list("d/").objects());
            assertEquals(300_000, listed.get("d/a.txt").size());
            assertEquals(300_000, listed.get("d/b.bin").size());
            assertEquals(300_000, listed.get("d/e.bin").size(), "sized by x-amz-meta-uncompressed-size");
            assertFalse(listed.containsKey("d/c.bin"), "no size stated, no metadata: not shown");
            assertEquals(3, listed.get("d/taken").size(), "the bucket's own object keeps its name");
            assertTrue(listed.containsKey("d/a.txt.gz"), "the compressed object stays");
            assertEquals(3L, store.stats().get("sized"));
            assertEquals(1L, store.stats().get("unsized"));

            for (String key : List.of("d/a.txt", "d/b.bin", "d/e.bin")) {
                ObjectSummary f = listed.get(key);
                for (int chunk = 0; chunk * CHUNK < body.length; chunk++) {
                    int length = Math.min(CHUNK, body.length - chunk * CHUNK);
                    assertArrayEquals(slice(body, chunk * CHUNK, length), read(store, f, (long) chunk * CHUNK, length), key);
                }
            }
            assertEquals(0L, store.stats().get("restarts"), "in order: one decode per file");
        }
    }

    @Test
    void readsOutOfOrderAndBackwardsReturnTheRightBytes() throws Exception {
        s3.put("data", "z.bin.zst", Zstd.compress(body));
        try (DecompressedStore store = new DecompressedStore(s3.store("data"))) {
            ObjectSummary f = byKey(store.list("").objects()).get("z.bin");
            // readahead asks for several chunks at once, in any order
            List<CompletableFuture<byte[]>> reads = new ArrayList<>();
            var threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();
            for (int chunk : new int[] {3, 1, 2, 0}) {
                reads.add(CompletableFuture.supplyAsync(() -> read(store, f, (long) chunk * CHUNK, CHUNK), threads));
            }
            int[] order = {3, 1, 2, 0};
            for (int i = 0; i < order.length; i++) {
                assertArrayEquals(slice(body, order[i] * CHUNK, CHUNK), reads.get(i).get(10, TimeUnit.SECONDS));
            }
            assertEquals(0L, store.stats().get("restarts"), "the reads were put in order, not restarted");
            assertArrayEquals(slice(body, 100, 1000), read(store, f, 100, 1000));
            assertEquals(1L, store.stats().get("restarts"), "behind the cursor: decoded again from the start");
        }
    }

    @Test
    void corruptOrMisSizedStreamsFailTheirReadsNeverWithWrongBytes() throws Exception {
        byte[] corrupt = gzip(body);
        for (int i = 100; i < 200; i++) {
            corrupt[i] ^= 0x33;
        }
        ByteArrayOutputStream both = new ByteArrayOutputStream();
        both.write(gzip(body));
        both.write(gzip(slice(body, 0, 1000))); // ISIZE says 1000: the last member's size only
        byte[] twoMembers = both.toByteArray();
        s3.put("data", "bad.gz", corrupt).put("data", "two.gz", twoMembers);
        try (DecompressedStore store = new DecompressedStore(s3.store("data"))) {
            Map<String, ObjectSummary> listed = byKey(store.list("").objects());
            StoreException e = assertThrows(StoreException.class, () -> read(store, listed.get("bad"), 0, CHUNK));
            assertEquals(StoreException.Kind.PROTOCOL, e.kind());
            ObjectSummary two = listed.get("two");
            assertEquals(1000, two.size());
            e = assertThrows(StoreException.class, () -> read(store, two, 0, 1000));
            assertTrue(e.getMessage().contains("decodes to more"), e.getMessage());
            assertEquals(2L, store.stats().get("corrupt"));
        }
    }

    @Test
    void aReadOfAnOldVersionFailsAsChanged() throws Exception {
        s3.put("data", "v.gz", gzip(body));
        try (DecompressedStore store = new DecompressedStore(s3.store("data"))) {
            ObjectSummary old = byKey(store.list("").objects()).get("v");
            s3.put("data", "v.gz", gzip(text(1000, 9)));
            store.list("");
            StoreException e = assertThrows(StoreException.class, () -> read(store, old, 0, 100));
            assertEquals(StoreException.Kind.CHANGED, e.kind());
        }
    }

    @Test
    void aViewIsStagedOnlyOnceDecodedAndCheckedWholeAndReadAheadLittle(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp)
            throws Exception {
        byte[] badTrailer = gzip(body);
        badTrailer[badTrailer.length - 6] ^= 0x5a; // the CRC: every byte decodes, the check at the end fails
        s3.put("data", "v/bad.gz", badTrailer).put("data", "v/good.gz", gzip(body));
        var region = io.os2g.staging.StagingRegion.create(io.os2g.staging.StagingConfig.of(tmp.resolve("staging"), 64L << 20,
                java.time.Duration.ofSeconds(5)));
        try (DecompressedStore store = new DecompressedStore(s3.store("data"))) {
            var namespace = new io.os2g.namespace.Namespace(store, "", java.time.Duration.ofMinutes(5));
            var index = new io.os2g.staging.ExtentIndex(region, 1 << 20);
            Map<String, ObjectSummary> listed = byKey(store.list("v/").objects());
            assertTrue(store.decodes("v/bad") && store.decodes("v/good"));
            assertFalse(store.decodes("v/bad.gz"), "the stored object is read as stored");
            try (Agent agent = new Agent(store, index, new AgentConfig(1 << 20, 64 * 1024, 256L << 20, 8, 0), namespace)) {
                ObjectSummary bad = listed.get("v/bad");
                long h = agent.open(1, bad.key(), bad.etag(), bad.size());
                var failed = assertThrows(java.util.concurrent.ExecutionException.class, () -> agent.stage(h, 0, 4096).get(10, TimeUnit.SECONDS));
                assertTrue(failed.getCause() instanceof StoreException se && se.kind() == StoreException.Kind.PROTOCOL, failed.toString());
                assertEquals(null, index.view().acquire(new io.os2g.staging.ChunkKey(1, 0), bad.etag(), 1),
                        "none of a stream that fails its check is readable, not even its first bytes");
                ObjectSummary good = listed.get("v/good");
                long g = agent.open(2, good.key(), good.etag(), good.size());
                agent.stage(g, 0, 4096).get(10, TimeUnit.SECONDS);
                var chunk = index.view().acquire(new io.os2g.staging.ChunkKey(2, 0), good.etag());
                assertTrue(chunk != null, "read whole");
                index.view().release(chunk);
            } finally {
                namespace.close();
            }
        } finally {
            region.close();
        }
    }
}
