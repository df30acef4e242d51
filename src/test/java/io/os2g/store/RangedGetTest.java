package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.os2g.support.S3Fixture;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The reads' own GET path: signatures over odd keys, and answers that are not the range asked for. */
@Tag("s3")
class RangedGetTest {

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    private HttpServer server;

    @AfterEach
    void stopServer() {
        if (server != null) {
            server.stop(0);
        }
    }

    @Test
    void keysWithCharactersThatNeedEncodingAreSignedAndReadExactly() throws Exception {
        S3Fixture s3 = new S3Fixture(proxy).bucket("data");
        List<String> keys = List.of("a b/c+d=e&f.jpg", "ünï/cödé 100%.bin", "x/(1)!'*~;,@$.txt", "tilde~/semi;colon");
        for (int i = 0; i < keys.size(); i++) {
            s3.put("data", keys.get(i), S3Fixture.bytes(70_000, i));
        }
        try (MinioObjectStore store = s3.store("data")) {
            for (int i = 0; i < keys.size(); i++) {
                byte[] expected = S3Fixture.bytes(70_000, i);
                byte[] got = new byte[50_000];
                store.get(keys.get(i), 10_000, got.length, "", in -> in.readNBytes(got, 0, got.length));
                assertArrayEquals(java.util.Arrays.copyOfRange(expected, 10_000, 60_000), got, keys.get(i));
            }
        }
    }

    @Test
    void aServerThatIgnoresRangeIsRefusedNotReadFromTheWrongOffset() throws Exception {
        AtomicInteger requests = new AtomicInteger();
        try (MinioObjectStore store = storeAnswering(200, "0123456789".getBytes(StandardCharsets.US_ASCII), null, requests)) {
            StoreException e = assertThrows(StoreException.class, () -> store.get("k", 4, 3, "", in -> in.readNBytes(3)));
            assertEquals(StoreException.Kind.PROTOCOL, e.kind());
            assertEquals(1, requests.get(), "not retried: asking again gets the same answer");
            byte[] first = new byte[3];
            store.get("k", 0, 3, "", in -> in.readNBytes(first, 0, 3));
            assertArrayEquals("012".getBytes(StandardCharsets.US_ASCII), first, "a whole body is right from offset 0");
        }
    }

    @Test
    void aContentRangeThatIsNotTheOneAskedForIsRefused() throws Exception {
        try (MinioObjectStore store = storeAnswering(206, "456".getBytes(StandardCharsets.US_ASCII), "bytes 3-5/10", new AtomicInteger())) {
            StoreException e = assertThrows(StoreException.class, () -> store.get("k", 4, 3, "", in -> in.readNBytes(3)));
            assertEquals(StoreException.Kind.PROTOCOL, e.kind());
        }
    }

    @Test
    void a206WithoutContentRangeIsRefused() throws Exception {
        // nothing says which bytes it holds: never handed to a reader as the range asked for
        try (MinioObjectStore store = storeAnswering(206, "0123".getBytes(StandardCharsets.US_ASCII), null, new AtomicInteger())) {
            StoreException e = assertThrows(StoreException.class, () -> store.get("k", 0, 4, "", in -> in.readNBytes(4)));
            assertEquals(StoreException.Kind.PROTOCOL, e.kind());
            assertTrue(e.getMessage().contains("without Content-Range"), e.getMessage());
        }
    }

    @Test
    void aLoadBalancerPageIsRetriedAndThenUnavailable() throws Exception {
        AtomicInteger requests = new AtomicInteger();
        byte[] page = "<html><body>502 Bad Gateway</body></html>".getBytes(StandardCharsets.US_ASCII);
        try (MinioObjectStore store = storeAnswering(502, page, null, requests)) {
            StoreException e = assertThrows(StoreException.class, () -> store.get("k", 0, 3, "", in -> in.readNBytes(3)));
            assertEquals(StoreException.Kind.UNAVAILABLE, e.kind());
            assertEquals(3, requests.get());
        }
    }

    @Test
    @Timeout(60)
    void aBodyThatStallsFailsWithinTheCallDeadline() throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newCachedThreadPool());
        server.createContext("/", exchange -> {
            exchange.sendResponseHeaders(200, 1000);
            OutputStream out = exchange.getResponseBody();
            out.write(new byte[10]);
            out.flush();
            try {
                released.await(); // the other 990 bytes never come
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            exchange.close();
        });
        server.start();
        RetryPolicy retry = new RetryPolicy(2, Duration.ofMillis(5), Duration.ofMillis(20), Duration.ofMillis(500));
        StoreConfig config = new StoreConfig(URI.create("http://127.0.0.1:" + server.getAddress().getPort()),
                "us-east-1", true, "data", new Credentials("id", "secret", null), false, retry, 4, Tls.SYSTEM);
        try (MinioObjectStore store = new MinioObjectStore(config)) {
            long t0 = System.nanoTime();
            assertThrows(StoreException.class, () -> store.get("k", 0, 1000, "", in -> in.readNBytes(1000)));
            // each attempt ends at its call deadline (the server never finishes): no hang
            assertTrue(Duration.ofNanos(System.nanoTime() - t0).compareTo(retry.deadline().plusSeconds(2)) < 0);
        } finally {
            released.countDown();
        }
    }

    @Test
    void urlsAreTheOnesTheMinioClientBuilds() {
        StoreConfig aws = new StoreConfig(URI.create("https://s3.amazonaws.com"), "eu-west-1", true, "my-bucket",
                new Credentials("AKIAEXAMPLE", "secret", null), false, RetryPolicy.DEFAULT, 4, Tls.SYSTEM);
        try (MinioObjectStore store = new MinioObjectStore(aws)) {
            assertEquals("https://s3.eu-west-1.amazonaws.com/my-bucket/a%20b/c%2Bd.jpg",
                    store.objectUrl("a b/c+d.jpg").toString());
        }
        StoreConfig virtual = new StoreConfig(URI.create("http://store.example:9000"), "us-east-1", true, "my-bucket",
                Credentials.anonymous(), true, RetryPolicy.DEFAULT, 4, Tls.SYSTEM);
        try (MinioObjectStore store = new MinioObjectStore(virtual)) {
            assertEquals("http://my-bucket.store.example:9000/k/v", store.objectUrl("k/v").toString());
        }
    }

    /** A store whose endpoint answers every request with {@code status} and {@code body}. */
    private MinioObjectStore storeAnswering(int status, byte[] body, String contentRange, AtomicInteger requests)
            throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            requests.incrementAndGet();
            if (contentRange != null) {
                exchange.getResponseHeaders().add("Content-Range", contentRange);
            }
            exchange.sendResponseHeaders(status, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        StoreConfig config = new StoreConfig(URI.create("http://127.0.0.1:" + server.getAddress().getPort()),
                "us-east-1", true, "data", new Credentials("id", "secret", null), false,
                new RetryPolicy(3, Duration.ofMillis(5), Duration.ofMillis(20), Duration.ofSeconds(2)), 4, Tls.SYSTEM);
        return new MinioObjectStore(config);
    }
}
