package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.Errno;
import io.os2g.support.S3Fixture;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@Tag("s3")
class MinioObjectStoreTest {

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    private S3Fixture s3;

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
    }

    @Test
    void listsOneLevelWithSizesAndEtagsAcrossPages() throws Exception {
        for (int i = 0; i < 1005; i++) {
            s3.put("data", String.format("many/f%04d", i), new byte[i % 7]);
        }
        s3.put("data", "top.txt", new byte[3]).put("data", "many/sub/x", new byte[1]);
        try (MinioObjectStore store = s3.store("data")) {
            Listing root = store.list("");
            assertEquals(List.of("many/"), root.commonPrefixes());
            assertEquals("top.txt", root.objects().getFirst().key());
            assertEquals(3, root.objects().getFirst().size());
            Listing many = store.list("many/");
            assertEquals(1005, many.objects().size()); // more than one page of 1000
            assertEquals(List.of("many/sub/"), many.commonPrefixes());
            assertFalse(many.objects().getFirst().etag().contains("\""));
        }
    }

    @Test
    void keysWithCharactersThatNeedEncodingAreListedAsTheyAre() throws Exception {
        List<String> names = List.of("a b.txt", "c+d.txt", "100%.bin", "ünï cödé.jpg", "x&y=z<1>.txt", "q?r#s.txt",
                "t~u!v'(w)*.txt", "tab\there.txt", "%2F.txt");
        long before = System.currentTimeMillis() - 60_000;
        for (String name : names) {
            s3.put("data", "odd dir+/" + name, new byte[name.length()]);
        }
        s3.put("data", "odd dir+/sub &/x", new byte[1]);
        try (MinioObjectStore store = s3.store("data")) {
            assertEquals(List.of("odd dir+/"), store.list("").commonPrefixes());
            Listing odd = store.list("odd dir+/");
            assertEquals(names.stream().map(n -> "odd dir+/" + n).sorted().toList(),
                    odd.objects().stream().map(ObjectSummary::key).sorted().toList());
            for (ObjectSummary o : odd.objects()) {
                assertEquals(o.key().length() - "odd dir+/".length(), o.size(), o.key());
                assertTrue(o.lastModifiedMillis() > before && o.lastModifiedMillis() < System.currentTimeMillis() + 60_000, o.key());
                assertFalse(o.etag().isEmpty() || o.etag().contains("\""), o.key());
            }
            assertEquals(List.of("odd dir+/sub &/"), odd.commonPrefixes());
            assertEquals(List.of("odd dir+/sub &/x"), store.list("odd dir+/sub &/").objects().stream().map(ObjectSummary::key).toList());
        }
    }

    @Test
    void rangedReadReturnsExactlyTheRange() throws Exception {
        byte[] body = S3Fixture.bytes(300_000, 1);
        s3.put("data", "obj", body);
        try (MinioObjectStore store = s3.store("data")) {
            String etag = store.list("").objects().getFirst().etag();
            byte[] got = new byte[1000];
            store.get("obj", 123_456, 1000, etag, in -> assertEquals(1000, in.readNBytes(got, 0, 1000)));
            byte[] expected = new byte[1000];
            System.arraycopy(body, 123_456, expected, 0, 1000);
            assertArrayEquals(expected, got);
        }
    }

    @Test
    void rangesLargerThanASocketReadAreExactOneAfterAnotherOnOneConnection() throws Exception {
        byte[] body = S3Fixture.bytes(3 << 20, 7);
        s3.put("data", "big", body);
        long[][] ranges = {{0, 3 << 20}, {1, 1}, {BufferedSocketFactory.BUFFER - 3, 2 * BufferedSocketFactory.BUFFER + 5},
                {(3 << 20) - 100_000, 100_000}, {12_345, 700_001}};
        try (MinioObjectStore store = s3.store("data")) {
            String etag = store.list("").objects().getFirst().etag();
            for (long[] range : ranges) {
                int length = (int) range[1];
                byte[] got = new byte[length];
                store.get("big", range[0], length, etag, in -> assertEquals(length, in.readNBytes(got, 0, length)));
                byte[] expected = new byte[length];
                System.arraycopy(body, (int) range[0], expected, 0, length);
                assertArrayEquals(expected, got, "range " + range[0] + " +" + length);
            }
        }
    }

    @Test
    void aChangedObjectFailsTheIfMatch() throws Exception {
        s3.put("data", "obj", S3Fixture.bytes(1000, 1));
        try (MinioObjectStore store = s3.store("data")) {
            String etag = store.list("").objects().getFirst().etag();
            s3.put("data", "obj", S3Fixture.bytes(1000, 2));
            StoreException e = assertThrows(StoreException.class, () -> store.get("obj", 0, 10, etag, in -> in.readAllBytes()));
            assertEquals(StoreException.Kind.CHANGED, e.kind());
            assertEquals(Errno.EIO, e.errno());
        }
    }

    @Test
    void aMissingKeyIsEnoent() {
        try (MinioObjectStore store = s3.store("data")) {
            StoreException e = assertThrows(StoreException.class, () -> store.get("nope", 0, 1, "x", in -> in.readAllBytes()));
            assertEquals(Errno.ENOENT, e.errno());
        }
    }

    @Test
    void probeTellsBadCredentialsAndMissingBucketsApart() {
        try (MinioObjectStore store = new MinioObjectStore(s3.config("data", new Credentials(S3Fixture.ACCESS_KEY, "wrong", null)))) {
            StoreException refused = assertThrows(StoreException.class, () -> store.probe(""));
            assertEquals(StoreException.Kind.BAD_CREDENTIALS, refused.kind(), refused.getMessage());
        }
        try (MinioObjectStore store = s3.store("no-such-bucket")) {
            assertEquals(StoreException.Kind.NO_SUCH_BUCKET, assertThrows(StoreException.class, () -> store.probe("")).kind());
        }
        try (MinioObjectStore store = s3.store("data")) {
            store.probe("");
        }
    }

    @Test
    void anUnreachableEndpointFailsWithinTheDeadlineAfterBoundedRetries() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        StoreConfig config = new StoreConfig(URI.create("http://127.0.0.1:" + port), "us-east-1", true, "data",
                Credentials.anonymous(), false, new RetryPolicy(3, Duration.ofMillis(10), Duration.ofMillis(50), Duration.ofSeconds(2)), 4, Tls.SYSTEM);
        try (MinioObjectStore store = new MinioObjectStore(config)) {
            long t0 = System.nanoTime();
            StoreException e = assertThrows(StoreException.class, () -> store.get("k", 0, 1, "e", in -> in.readAllBytes()));
            assertEquals(StoreException.Kind.UNREACHABLE, e.kind());
            assertEquals(2, store.retryCount());
            assertTrue(Duration.ofNanos(System.nanoTime() - t0).compareTo(config.retry().deadline()) < 0);
        }
    }
}
