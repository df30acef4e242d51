package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.minio.GetObjectArgs;
import io.os2g.support.S3Fixture;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The uploads' own PUT path: parts and whole objects streamed as unsigned payloads to a real S3Proxy
 * (odd keys, a multipart upload completed, a retried part streamed again), and answers a store may
 * give it from a scripted server: no ETag, a refusal of unsigned payloads (then signed uploads), errors.
 */
@Tag("s3")
class StreamedPutTest {

    private static final int MiB = 1 << 20;

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    private HttpServer server;

    @AfterEach
    void stopServer() {
        if (server != null) {
            server.stop(0);
        }
    }

    /** A body that counts how often it is written (once per attempt). */
    private static final class Counted implements ObjectUploads.Body {
        final byte[] bytes;
        final AtomicInteger writes = new AtomicInteger();

        Counted(byte[] bytes) {
            this.bytes = bytes;
        }

        @Override
        public int length() {
            return bytes.length;
        }

        @Override
        public void writeTo(OutputStream out) throws IOException {
            writes.incrementAndGet();
            for (int at = 0; at < bytes.length; at += 64 * 1024) {
                out.write(bytes, at, Math.min(64 * 1024, bytes.length - at));
            }
        }
    }

    private static byte[] get(S3Fixture s3, String bucket, String key) throws Exception {
        try (var in = s3.client().getObject(GetObjectArgs.builder().bucket(bucket).object(key).build())) {
            return in.readAllBytes();
        }
    }

    @Test
    void partsAndObjectsOfOddKeysArriveWholeAndAMultipartUploadCompletes() throws Exception {
        S3Fixture s3 = new S3Fixture(proxy).bucket("out");
        try (MinioObjectStore store = s3.store("out")) {
            for (String key : List.of("ckpt/ünï step+1 (a).pt", "a b/c=d&e%f~g.bin")) {
                byte[] small = S3Fixture.bytes(100_000, key.length());
                ObjectSummary put = store.putObject(key, new Counted(small));
                assertEquals(small.length, put.size());
                assertArrayEquals(small, get(s3, "out", key), key);
            }
            String key = "ckpt/big ü.pt";
            byte[] whole = S3Fixture.bytes(12 * MiB + 7, 3);
            String upload = store.startUpload(key);
            List<String> etags = new ArrayList<>();
            for (int part = 0; part * 5 * MiB < whole.length; part++) {
                int from = part * 5 * MiB;
                byte[] bytes = java.util.Arrays.copyOfRange(whole, from, Math.min(whole.length, from + 5 * MiB));
                etags.add(store.uploadPart(key, upload, part + 1, new Counted(bytes)));
            }
            ObjectSummary done = store.completeUpload(key, upload, etags, whole.length);
            assertArrayEquals(whole, get(s3, "out", key));
            assertTrue(done.etag().endsWith("-3"), "a multipart ETag: " + done.etag());

            String aborted = store.startUpload("ckpt/dropped.pt");
            store.uploadPart("ckpt/dropped.pt", aborted, 1, new Counted(S3Fixture.bytes(5 * MiB, 9)));
            store.abortUpload("ckpt/dropped.pt", aborted);
            store.abortUpload("ckpt/dropped.pt", aborted); // no such upload any more: not an error
            assertThrows(io.minio.errors.ErrorResponseException.class, () -> get(s3, "out", "ckpt/dropped.pt"), "never published");
        }
    }

    @Test
    void aPartTheServerFailsIsStreamedAgainWhole() throws Exception {
        List<byte[]> received = new CopyOnWriteArrayList<>();
        AtomicInteger requests = new AtomicInteger();
        try (MinioObjectStore store = storeAnswering((method, body) -> {
            received.add(body);
            return requests.incrementAndGet() == 1 ? new Answer(503, "<Error><Code>SlowDown</Code></Error>", null)
                    : new Answer(200, "", "\"etag-1\"");
        })) {
            Counted body = new Counted(S3Fixture.bytes(300_000, 4));
            assertEquals("etag-1", store.uploadPart("k", "u-1", 1, body));
            assertEquals(2, body.writes.get(), "written again for the retry");
            assertEquals(2, received.size());
            received.forEach(r -> assertArrayEquals(body.bytes, r));
        }
    }

    @Test
    void anAnswerWithoutAnEtagOrAnErrorIsRefusedNotBelieved() throws Exception {
        try (MinioObjectStore store = storeAnswering((method, body) -> new Answer(200, "", null))) {
            StoreException e = assertThrows(StoreException.class, () -> store.uploadPart("k", "u", 1, new Counted(new byte[10])));
            assertEquals(StoreException.Kind.PROTOCOL, e.kind());
        }
        stopServer();
        try (MinioObjectStore store = storeAnswering((method, body) ->
                new Answer(403, "<Error><Code>AccessDenied</Code><Message>no</Message></Error>", null))) {
            StoreException e = assertThrows(StoreException.class, () -> store.uploadPart("k", "u", 1, new Counted(new byte[10])));
            assertEquals(StoreException.Kind.ACCESS_DENIED, e.kind());
        }
    }

    @Test
    void aStoreThatRefusesUnsignedPayloadsGetsSignedPutsFromThenOn() throws Exception {
        List<String> hashes = new CopyOnWriteArrayList<>();
        try (MinioObjectStore store = storeAnswering((hash, body) -> {
            hashes.add(hash);
            return hash.equals("UNSIGNED-PAYLOAD") ? new Answer(501, "<Error><Code>NotImplemented</Code></Error>", null)
                    : new Answer(200, "", "\"signed\"");
        })) {
            byte[] bytes = S3Fixture.bytes(1000, 5);
            assertEquals("signed", store.uploadPart("k", "u", 1, new Counted(bytes)));
            assertEquals("signed", store.uploadPart("k", "u", 2, new Counted(bytes)));
            assertEquals(3, hashes.size(), "refused once, then signed: " + hashes);
            assertEquals("UNSIGNED-PAYLOAD", hashes.get(0));
            assertEquals(64, hashes.get(1).length(), "the body's SHA-256: " + hashes.get(1));
        }
    }

    private record Answer(int status, String body, String etag) {
    }

    @FunctionalInterface
    private interface Script {
        /** The answer to a request with this x-amz-content-sha256 and body. */
        Answer answer(String payloadHash, byte[] body);
    }

    private MinioObjectStore storeAnswering(Script script) throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            byte[] body = exchange.getRequestBody().readAllBytes();
            Answer answer = script.answer(String.valueOf(exchange.getRequestHeaders().getFirst("x-amz-content-sha256")), body);
            if (answer.etag() != null) {
                exchange.getResponseHeaders().add("ETag", answer.etag());
            }
            byte[] out = answer.body().getBytes(java.nio.charset.StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(answer.status(), out.length == 0 ? -1 : out.length);
            if (out.length > 0) {
                exchange.getResponseBody().write(out);
            }
            exchange.close();
        });
        server.start();
        RetryPolicy retry = new RetryPolicy(3, Duration.ofMillis(5), Duration.ofMillis(20), Duration.ofSeconds(5));
        StoreConfig config = new StoreConfig(URI.create("http://127.0.0.1:" + server.getAddress().getPort()),
                "us-east-1", true, "data", new Credentials("id", "secret", null), false, retry, 4, Tls.SYSTEM);
        return new MinioObjectStore(config);
    }
}
