package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.os2g.support.S3Fixture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** GETs on plain HTTP whose bodies are read from the socket: bytes, kept connections, answers it leaves to OkHttp. */
@Tag("s3")
@Timeout(60)
class SocketHttpTest {

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    private ScriptedServer scripted;
    private HttpServer server;

    @AfterEach
    void stop() throws IOException {
        if (scripted != null) {
            scripted.close();
        }
        if (server != null) {
            server.stop(0);
        }
    }

    @Test
    void bodiesReadAsAChannelOrAsAStreamAreExactlyTheRange() throws Exception {
        byte[] body = S3Fixture.bytes(3 << 20, 5);
        S3Fixture s3 = new S3Fixture(proxy).bucket("data");
        s3.put("data", "big", body);
        long[][] ranges = {{0, 3 << 20}, {1, 1}, {65_533, 200_007}, {(3 << 20) - 100_000, 100_000}, {12_345, 700_001}};
        try (MinioObjectStore store = s3.store("data")) {
            for (int i = 0; i < ranges.length * 2; i++) {
                long offset = ranges[i / 2][0];
                int length = (int) ranges[i / 2][1];
                byte[] got = i % 2 == 0 ? readAsChannel(store, "big", offset, length) : readAsStream(store, "big", offset, length);
                assertArrayEquals(java.util.Arrays.copyOfRange(body, (int) offset, (int) offset + length), got,
                        (i % 2 == 0 ? "channel " : "stream ") + offset + " +" + length);
            }
            assertEquals(0, store.retryCount());
        }
    }

    @Test
    void aConnectionTheServerClosedWhileIdleIsReplacedWithoutARetry() throws Exception {
        // every connection answers one GET, keeps quiet about closing, and is then closed by the server
        scripted = new ScriptedServer(request -> ScriptedServer.partial(request, "abc"), 1);
        try (MinioObjectStore store = scripted.store()) {
            for (int i = 0; i < 3; i++) {
                assertArrayEquals("abc".getBytes(StandardCharsets.US_ASCII), readAsStream(store, "k", 0, 3));
                scripted.awaitClosed(i + 1);
            }
            assertEquals(0, store.retryCount(), "a stale connection is not a failed GET");
            assertEquals(3, scripted.connections.get());
        }
    }

    @Test
    void aKeptConnectionServesTheNextGetAndAnEarlyHintIsPassedOver() throws Exception {
        scripted = new ScriptedServer(request -> "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                + ScriptedServer.partial(request, "xyz"), 0);
        try (MinioObjectStore store = scripted.store()) {
            for (int i = 0; i < 4; i++) {
                assertArrayEquals("xyz".getBytes(StandardCharsets.US_ASCII), readAsChannel(store, "k", 0, 3));
            }
            assertEquals(1, scripted.connections.get());
            assertEquals(4, scripted.requests.get());
        }
    }

    @Test
    void aBodyCutShortIsRetriedAndThenUnavailable() throws Exception {
        scripted = new ScriptedServer(request -> "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-999/1000\r\nContent-Length: 1000\r\n\r\n0123456789", 1);
        try (MinioObjectStore store = scripted.store()) {
            StoreException e = assertThrows(StoreException.class, () -> readAsChannel(store, "k", 0, 1000));
            assertEquals(StoreException.Kind.UNAVAILABLE, e.kind());
            assertEquals(3, scripted.requests.get());
        }
    }

    @Test
    void anErrorAnswerIsReadForItsCodeAndTheConnectionNotKept() throws Exception {
        scripted = new ScriptedServer(request -> ScriptedServer.answer("HTTP/1.1 404 Not Found",
                "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>"), 0);
        try (MinioObjectStore store = scripted.store()) {
            for (int i = 0; i < 2; i++) {
                StoreException e = assertThrows(StoreException.class, () -> readAsStream(store, "k", 0, 3));
                assertEquals(StoreException.Kind.NOT_FOUND, e.kind());
            }
            assertEquals(2, scripted.connections.get());
        }
    }

    @Test
    void aConditionalCreateIsTrueOnceThenFalseOnPreconditionFailedOnOneKeptConnection() throws Exception {
        AtomicInteger answered = new AtomicInteger();
        scripted = new ScriptedServer(request -> answered.getAndIncrement() == 0
                ? "HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: 0\r\n\r\n"
                : ScriptedServer.answer("HTTP/1.1 412 Precondition Failed", "<?xml version=\"1.0\"?><Error><Code>PreconditionFailed</Code></Error>"), 0);
        try (MinioObjectStore store = scripted.store()) {
            assertTrue(store.createIfAbsent("m"));
            assertTrue(scripted.lastRequest.startsWith("PUT /data/m ") && scripted.lastRequest.contains("\r\nIf-None-Match: *\r\n")
                    && scripted.lastRequest.contains("\r\nContent-Length: 0\r\n"), scripted.lastRequest);
            assertFalse(store.createIfAbsent("m"), "there already");
            assertFalse(store.createIfAbsent("m"));
            assertEquals(3, scripted.requests.get(), "a condition that did not hold is an answer, not retried");
            assertEquals(1, scripted.connections.get(), "a whole error answer leaves the connection kept");
        }
    }

    @Test
    void aChunkedAnswerIsReadThroughOkHttpAndLaterGetsGoThereToo() throws Exception {
        AtomicInteger requests = new AtomicInteger();
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            requests.incrementAndGet();
            exchange.getResponseHeaders().add("Content-Range", "bytes 0-4/5");
            exchange.sendResponseHeaders(206, 0); // no length: chunked
            try (OutputStream out = exchange.getResponseBody()) {
                out.write("chunk".getBytes(StandardCharsets.US_ASCII));
            }
        });
        server.start();
        try (MinioObjectStore store = new MinioObjectStore(config("http://127.0.0.1:" + server.getAddress().getPort()))) {
            assertArrayEquals("chunk".getBytes(StandardCharsets.US_ASCII), readAsStream(store, "k", 0, 5));
            assertEquals(2, requests.get(), "asked once on its own socket, once through OkHttp");
            assertArrayEquals("chunk".getBytes(StandardCharsets.US_ASCII), readAsStream(store, "k", 0, 5));
            assertEquals(3, requests.get());
            assertEquals(0, store.retryCount());
        }
    }

    // a server that ignored If-Match served the first chunk of one version and the rest of another
    @Test
    void anAnswerOfAnotherVersionOrOfNoneNamedIsRefusedNotRetried() throws Exception {
        scripted = new ScriptedServer(request -> ScriptedServer.partialOf(request, "b", "ETag: \"other\"\r\n"), 0);
        try (MinioObjectStore store = scripted.store()) {
            StoreException changed = assertThrows(StoreException.class, () -> store.get("k", 7, 1, "0123abcd", in -> in.readNBytes(1)));
            assertEquals(StoreException.Kind.CHANGED, changed.kind(), changed.getMessage());
            assertEquals(0, store.retryCount());
        }
        scripted.close();
        scripted = new ScriptedServer(request -> ScriptedServer.partialOf(request, "b", ""), 0);
        try (MinioObjectStore store = scripted.store()) {
            StoreException none = assertThrows(StoreException.class, () -> store.get("k", 7, 1, "0123abcd", in -> in.readNBytes(1)));
            assertEquals(StoreException.Kind.PROTOCOL, none.kind(), none.getMessage());
        }
    }

    @Test
    void theRequestIsTheSignedGetWithItsRangeAndCondition() throws Exception {
        scripted = new ScriptedServer(request -> ScriptedServer.partial(request, "b"), 0);
        try (MinioObjectStore store = scripted.store()) {
            byte[] got = new byte[1];
            store.get("dir/a b.bin", 7, 1, "0123abcd", in -> in.readNBytes(got, 0, 1));
            String head = scripted.lastRequest;
            assertEquals("GET /data/dir/a%20b.bin HTTP/1.1", head.lines().findFirst().orElseThrow());
            assertEquals(java.util.List.of("Accept-Encoding: identity", "Range: bytes=7-7", "If-Match: \"0123abcd\"",
                    "Host: 127.0.0.1:" + scripted.port()), head.lines().skip(1).limit(4).toList());
            assertEquals(1, head.lines().filter(l -> l.startsWith("Authorization: AWS4-HMAC-SHA256 Credential=id/")).count(), head);
        }
    }

    @Test
    void anEndpointTheJvmSendsThroughAProxyIsReadThroughOkHttpAndTheProxy() throws Exception {
        scripted = new ScriptedServer(request -> ScriptedServer.partial(request, "via"), 0);
        java.net.ProxySelector before = java.net.ProxySelector.getDefault();
        java.net.Proxy proxy = new java.net.Proxy(java.net.Proxy.Type.HTTP, new InetSocketAddress("127.0.0.1", scripted.port()));
        java.net.ProxySelector.setDefault(new java.net.ProxySelector() {
            @Override
            public java.util.List<java.net.Proxy> select(URI uri) {
                return java.util.List.of(proxy);
            }

            @Override
            public void connectFailed(URI uri, java.net.SocketAddress address, IOException e) {
            }
        });
        try (MinioObjectStore store = new MinioObjectStore(config("http://store.invalid:9000"))) {
            assertArrayEquals("via".getBytes(StandardCharsets.US_ASCII), readAsStream(store, "k", 0, 3));
            assertEquals("GET http://store.invalid:9000/data/k HTTP/1.1", scripted.lastRequest.lines().findFirst().orElseThrow());
        } finally {
            java.net.ProxySelector.setDefault(before);
        }
    }

    @Test
    void aHostWhoseFirstAddressRefusesIsReachedThroughTheNext() throws Exception {
        scripted = new ScriptedServer(request -> ScriptedServer.partial(request, "next"), 0);
        java.net.InetAddress refusing = java.net.InetAddress.getByAddress("store.test", new byte[] {127, 0, 0, 2});
        java.net.InetAddress listening = java.net.InetAddress.getByAddress("store.test", new byte[] {127, 0, 0, 1});
        try (SocketHttp get = new SocketHttp(Duration.ofSeconds(2), Duration.ofSeconds(5), 2, host -> new java.net.InetAddress[] {refusing, listening})) {
            okhttp3.Request request = new okhttp3.Request.Builder().url("http://store.test:" + scripted.port() + "/data/k")
                    .header("Range", "bytes=0-3").build();
            byte[] got = new byte[4];
            get.get(request, 0, 4, "k", in -> in.readNBytes(got, 0, 4));
            assertArrayEquals("next".getBytes(StandardCharsets.US_ASCII), got);
        }
    }

    private static StoreConfig config(String endpoint) {
        return new StoreConfig(URI.create(endpoint), "us-east-1", true, "data", new Credentials("id", "secret", null), false,
                new RetryPolicy(3, Duration.ofMillis(5), Duration.ofMillis(20), Duration.ofSeconds(5)), 4, Tls.SYSTEM);
    }

    private static byte[] readAsChannel(MinioObjectStore store, String key, long offset, int length) {
        ByteBuffer got = ByteBuffer.allocateDirect(length);
        store.get(key, offset, length, "", in -> {
            ReadableByteChannel channel = assertInstanceOf(ReadableByteChannel.class, in, "a body read from the socket");
            got.clear();
            while (got.hasRemaining() && channel.read(got) >= 0) {
                // until the range is in
            }
            assertEquals(-1, channel.read(ByteBuffer.allocate(1)), "nothing past the range");
        });
        byte[] bytes = new byte[length];
        got.flip().get(bytes);
        return bytes;
    }

    private static byte[] readAsStream(MinioObjectStore store, String key, long offset, int length) {
        byte[] got = new byte[length];
        store.get(key, offset, length, "", in -> {
            assertEquals(length, in.readNBytes(got, 0, length));
            assertEquals(-1, in.read(), "nothing past the range");
        });
        return got;
    }

    /** An HTTP/1.1 server that answers each request head with what {@code answers} gives, for tests of the wire. */
    private static final class ScriptedServer implements AutoCloseable {
        final AtomicInteger connections = new AtomicInteger();
        final AtomicInteger requests = new AtomicInteger();
        private final AtomicInteger closed = new AtomicInteger();
        private final ServerSocket socket;
        private final java.util.function.Function<String, String> answers;
        /** Answers per connection before the server closes it; 0 for no limit. */
        private final int perConnection;
        volatile String lastRequest;

        ScriptedServer(java.util.function.Function<String, String> answers, int perConnection) throws IOException {
            this.answers = answers;
            this.perConnection = perConnection;
            this.socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread.ofVirtual().start(this::accept);
        }

        static String answer(String statusLine, String body) {
            return statusLine + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body;
        }

        /**
         * A 206 with {@code body} as the range the request asked for (its Content-Range says so), of the
         * version it asked for (its If-Match as the ETag).
         */
        static String partial(String request, String body) {
            String version = request.lines().filter(l -> l.startsWith("If-Match: ")).findFirst()
                    .map(l -> "ETag: " + l.substring("If-Match: ".length()) + "\r\n").orElse("");
            return partialOf(request, body, version);
        }

        /** {@link #partial} with {@code headers} (each line ending in CRLF) instead of the ETag. */
        static String partialOf(String request, String body, String headers) {
            String range = request.lines().filter(l -> l.startsWith("Range: bytes=")).findFirst().orElseThrow()
                    .substring("Range: bytes=".length());
            return "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + range + "/*\r\n" + headers + "Content-Length: "
                    + body.length() + "\r\n\r\n" + body;
        }

        int port() {
            return socket.getLocalPort();
        }

        MinioObjectStore store() {
            return new MinioObjectStore(config("http://127.0.0.1:" + port()));
        }

        void awaitClosed(int count) throws InterruptedException {
            while (closed.get() < count) {
                Thread.sleep(5);
            }
        }

        private void accept() {
            try {
                for (;;) {
                    Socket s = socket.accept();
                    connections.incrementAndGet();
                    Thread.ofVirtual().start(() -> serve(s));
                }
            } catch (IOException e) {
                // closed
            }
        }

        private void serve(Socket s) {
            try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
                for (int answered = 0; perConnection == 0 || answered < perConnection; answered++) {
                    String head = readHead(in);
                    if (head == null) {
                        return;
                    }
                    requests.incrementAndGet();
                    lastRequest = head;
                    out.write(answers.apply(head).getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
            } catch (IOException e) {
                // the client went away
            } finally {
                closed.incrementAndGet();
            }
        }

        private static String readHead(InputStream in) throws IOException {
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) >= 0) {
                head.write(c);
                String text = head.toString(StandardCharsets.ISO_8859_1);
                if (text.endsWith("\r\n\r\n")) {
                    return text;
                }
            }
            return null;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
