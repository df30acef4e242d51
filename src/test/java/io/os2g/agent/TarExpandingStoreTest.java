package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.codec.TarIndex;
import io.os2g.store.Listing;
import io.os2g.store.ObjectSummary;
import io.os2g.store.StoreException;
import io.os2g.support.S3Fixture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Tars shown as directories of their members, against a real S3 server. */
@Tag("s3")
class TarExpandingStoreTest {

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    private S3Fixture s3;
    private byte[] tar;

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
        tar = tar("cls/a.jpg", S3Fixture.bytes(3000, 1), "cls/b.jpg", S3Fixture.bytes(70_000, 2), "top.txt", S3Fixture.bytes(10, 3));
        s3.put("data", "shards/train-000.tar", tar).put("data", "shards/plain.txt", new byte[5]);
    }

    private static byte[] tar(Object... pathsAndBodies) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
            for (int i = 0; i < pathsAndBodies.length; i += 2) {
                byte[] body = (byte[]) pathsAndBodies[i + 1];
                TarArchiveEntry entry = new TarArchiveEntry((String) pathsAndBodies[i]);
                entry.setSize(body.length);
                out.putArchiveEntry(entry);
                out.write(body);
                out.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }

    private static byte[] read(TarExpandingStore store, ObjectSummary object, long offset, int length) {
        byte[] got = new byte[length];
        store.get(object.key(), offset, length, object.etag(), in -> in.readNBytes(got, 0, length));
        return got;
    }

    @Test
    void aTarIsAlsoADirectoryWhoseMembersReadAsTheirBytes() {
        try (TarExpandingStore store = new TarExpandingStore(s3.store("data"))) {
            Listing shards = store.list("shards/");
            assertEquals(List.of("shards/train-000.tar.d/"), shards.commonPrefixes());
            assertEquals(2, shards.objects().size(), "the tar stays a file");

            Listing top = store.list("shards/train-000.tar.d/");
            assertEquals(List.of("shards/train-000.tar.d/cls/"), top.commonPrefixes());
            assertEquals("shards/train-000.tar.d/top.txt", top.objects().getFirst().key());
            Listing cls = store.list("shards/train-000.tar.d/cls/");
            assertEquals(List.of("shards/train-000.tar.d/cls/a.jpg", "shards/train-000.tar.d/cls/b.jpg"),
                    cls.objects().stream().map(ObjectSummary::key).toList());
            ObjectSummary b = cls.objects().get(1);
            assertEquals(70_000, b.size());
            assertArrayEquals(S3Fixture.bytes(70_000, 2), read(store, b, 0, 70_000));
            assertArrayEquals(Arrays.copyOfRange(S3Fixture.bytes(70_000, 2), 65_536, 70_000), read(store, b, 65_536, 70_000 - 65_536));
            assertArrayEquals(new byte[5], read(store, shards.objects().get(0).key().endsWith("plain.txt")
                    ? shards.objects().get(0) : shards.objects().get(1), 0, 5));
            assertEquals(1L, store.stats().get("indexed_from_headers"));
        }
    }

    @Test
    void aSidecarThatDescribesTheTarIsUsedAndAStaleOneIsIgnored() throws Exception {
        ObjectSummary listed;
        try (TarExpandingStore store = new TarExpandingStore(s3.store("data"))) {
            listed = store.list("shards/").objects().stream().filter(o -> o.key().endsWith(".tar")).findFirst().orElseThrow();
        }
        TarIndex index = TarIndex.fromHeaders((position, target, offset, length) ->
                System.arraycopy(tar, (int) position, target, offset, length), tar.length);
        ByteArrayOutputStream sidecar = new ByteArrayOutputStream();
        index.writeSidecar(sidecar, tar.length, listed.etag());
        s3.put("data", "shards/train-000.tar.idx", sidecar.toByteArray());
        try (TarExpandingStore store = new TarExpandingStore(s3.store("data"))) {
            store.list("shards/");
            ObjectSummary a = store.list("shards/train-000.tar.d/cls/").objects().getFirst();
            assertArrayEquals(S3Fixture.bytes(3000, 1), read(store, a, 0, 3000));
            assertEquals(1L, store.stats().get("indexed_from_sidecar"));
            assertEquals(0L, store.stats().get("indexed_from_headers"));
        }

        s3.put("data", "shards/train-000.tar.idx", "{\"format\":\"os2g-tar-index\",\"version\":1,\"tar_size\":1}\n"
                .getBytes(StandardCharsets.UTF_8));
        try (TarExpandingStore store = new TarExpandingStore(s3.store("data"))) {
            store.list("shards/");
            assertEquals(2, store.list("shards/train-000.tar.d/cls/").objects().size());
            assertEquals(1L, store.stats().get("indexed_from_headers"), "stale sidecar: indexed from the headers");
        }
    }

    @Test
    void aNewVersionOfTheTarIsIndexedAgainAndAnOldMemberVersionIsRefused() throws Exception {
        try (TarExpandingStore store = new TarExpandingStore(s3.store("data"))) {
            store.list("shards/");
            ObjectSummary old = store.list("shards/train-000.tar.d/").objects().getFirst();
            s3.put("data", "shards/train-000.tar", tar("top.txt", S3Fixture.bytes(20, 9)));
            StoreException e = assertThrows(StoreException.class, () -> read(store, old, 0, 10));
            assertEquals(StoreException.Kind.CHANGED, e.kind());

            store.list("shards/");
            ObjectSummary fresh = store.list("shards/train-000.tar.d/").objects().getFirst();
            assertEquals(20, fresh.size());
            assertArrayEquals(S3Fixture.bytes(20, 9), read(store, fresh, 0, 20));
        }
    }

    @Test
    void aTruncatedMemberIsListedButReadsFail() throws Exception {
        s3.put("data", "cut.tar", Arrays.copyOf(tar, 512 + 3072 + 512 + 1000)); // inside cls/b.jpg
        try (TarExpandingStore store = new TarExpandingStore(s3.store("data"))) {
            store.list("");
            List<ObjectSummary> cls = store.list("cut.tar.d/cls/").objects();
            assertArrayEquals(S3Fixture.bytes(3000, 1), read(store, cls.get(0), 0, 3000));
            StoreException e = assertThrows(StoreException.class, () -> read(store, cls.get(1), 0, 100));
            assertTrue(e.getMessage().contains("truncated"), e.getMessage());
        }
    }

    @Test
    void aPrefixEndingInTarDWithoutATarIsTheBucketsOwn() throws Exception {
        s3.put("data", "real.tar.d/x.txt", new byte[3]);
        try (TarExpandingStore store = new TarExpandingStore(s3.store("data"))) {
            assertEquals(List.of("real.tar.d/", "shards/"), store.list("").commonPrefixes());
            assertEquals("real.tar.d/x.txt", store.list("real.tar.d/").objects().getFirst().key());
        }
    }
}
