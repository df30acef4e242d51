package io.os2g.store;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import okhttp3.Headers;
import okhttp3.HttpUrl;
import okhttp3.Request;

/**
 * os2g's own HTTP/1.1 client for plain {@code http://} endpoints, on connections of its own: ranged
 * GETs whose bodies the caller reads from the socket itself ({@link Body} is a {@link ReadableByteChannel}
 * too), and the PUTs of uploads, whose bodies the caller writes to it (from staging, sendfile). The agent reads a chunk into
 * native memory and pwrites it into staging, where OkHttp's stream copies every byte three more times
 * in Java (its socket buffer, okio's segments, the caller's array): an agent on few cores is limited by
 * its CPU per byte (docs/PERFORMANCE.md).
 *
 * <p>The request is {@link RangedGet}'s, signed the same way, and the answer is checked the same way.
 * What this does not speak stays with OkHttp: TLS (the store uses it for https endpoints) and a body
 * without Content-Length ({@link Unsupported}). A connection is kept for the next GET when its answer
 * was read to the end and the server did not ask to close it; one that the server closed while it sat
 * idle is replaced once, at no retry's cost.
 */
final class SocketHttp implements AutoCloseable {

    /** Head of an answer, and the buffer a body is read through by an InputStream reader. */
    private static final int BUFFER = 64 * 1024;
    /** Servers close idle keep-alive connections (Jetty after 30 s, S3 after ~20 s); older ones are not reused. */
    private static final long MAX_IDLE_NANOS = TimeUnit.SECONDS.toNanos(10);
    private static final ScheduledThreadPoolExecutor DEADLINES = deadlines();

    private final Duration connectTimeout;
    private final Resolver resolver;
    private final Duration callTimeout;
    private final int maxIdle;
    /** Connections to the one endpoint a store reads. */
    private final ConcurrentLinkedDeque<Connection> idle = new ConcurrentLinkedDeque<>();

    SocketHttp(Duration connectTimeout, Duration callTimeout, int maxIdle) {
        this(connectTimeout, callTimeout, maxIdle, Resolver.SYSTEM);
    }

    SocketHttp(Duration connectTimeout, Duration callTimeout, int maxIdle, Resolver resolver) {
        this.resolver = resolver;
        this.connectTimeout = connectTimeout;
        this.callTimeout = callTimeout;
        this.maxIdle = maxIdle;
    }

    private static ScheduledThreadPoolExecutor deadlines() {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1,
                Thread.ofPlatform().name("os2g-get-deadlines").daemon().factory());
        executor.setRemoveOnCancelPolicy(true);
        return executor;
    }

    /** An answer this class does not read; the caller sends the GET another way. */
    static final class Unsupported extends IOException {
        Unsupported(String message) {
            super(message);
        }
    }

    /**
     * Sends {@code request} (a signed ranged GET) and hands its body to {@code reader}; throws
     * {@link StoreException} for an answer that is not the range asked for or an error status, and
     * {@link IOException} for a transport failure (an {@link InterruptedIOException} at the deadline).
     */
    void get(Request request, long offset, long length, String what, ObjectStore.BodyReader reader) throws IOException {
        if (!request.url().scheme().equals("http")) {
            throw new IllegalArgumentException("plain HTTP only: " + request.url());
        }
        byte[] head = requestHead(request);
        String pinned = ObjectSummary.unquote(request.header("If-Match"));
        onConnection(request.url(), connection -> new Outcome<>(null, exchange(connection, head, offset, length, pinned, what, reader)));
    }

    /** What one request on a connection gave, and whether the connection may serve another. */
    private record Outcome<T>(T value, boolean reusable) {
    }

    @FunctionalInterface
    private interface Exchange<T> {
        Outcome<T> on(Connection connection) throws IOException;
    }

    /**
     * Runs one request on a kept or new connection to {@code url}'s server within the call's deadline,
     * and keeps the connection where the exchange says it may be; a kept connection the server closed
     * while it sat idle (no byte of an answer came) is replaced once, as the request was never seen.
     */
    private <T> T onConnection(HttpUrl url, Exchange<T> exchange) throws IOException {
        for (;;) {
            Connection connection = take(url);
            ScheduledFuture<?> deadline = DEADLINES.schedule(connection::expire, callTimeout.toNanos(), TimeUnit.NANOSECONDS);
            try {
                Outcome<T> outcome = exchange.on(connection);
                // a deadline that fired as the answer ended has closed the socket: not one to keep
                if (deadline.cancel(false) && outcome.reusable()) {
                    giveBack(connection);
                } else {
                    connection.close();
                }
                return outcome.value();
            } catch (IOException e) {
                connection.close();
                if (connection.expired) {
                    throw new InterruptedIOException("timeout: no whole answer within " + callTimeout.toMillis() + " ms");
                }
                if (connection.reused && !connection.answered) {
                    continue; // closed by the server while it was idle: the request was never seen
                }
                throw e;
            } catch (RuntimeException e) {
                connection.close();
                throw e;
            } finally {
                deadline.cancel(false);
            }
        }
    }

    /**
     * Sends {@code request} (a signed PUT, no body of its own) with {@code body} written straight to the
     * socket, and returns the answer's ETag without quotes; throws {@link StoreException} for an error
     * answer and {@link IOException} for a transport failure (an {@link InterruptedIOException} at the
     * deadline). A connection the server closed while it sat idle is replaced once: the body is sent again.
     */
    String put(Request request, ObjectUploads.Body body, String what) throws IOException {
        if (!request.url().scheme().equals("http")) {
            throw new IllegalArgumentException("plain HTTP only: " + request.url());
        }
        byte[] head = requestHead(request.newBuilder().header("Content-Length", Integer.toString(body.length())).build());
        Object answered = onConnection(request.url(), connection -> {
            ByteBuffer out = ByteBuffer.wrap(head);
            while (out.hasRemaining()) {
                connection.channel.write(out);
            }
            body.transferTo(connection.channel);
            Head answer = connection.readHead();
            long contentLength = answer.contentLength();
            byte[] text = new Body(connection, contentLength < 0 ? 0 : Math.min(contentLength, ErrorAnswer.MAX_BODY)).readAllBytes();
            boolean reusable = contentLength >= 0 && text.length == contentLength && answer.keepAlive();
            if (answer.status() != 200) {
                // a whole error answer leaves the connection fit for the next request (a conditional PUT's 412)
                return new Outcome<Object>(ErrorAnswer.of(answer.status(), text, answer.header(ErrorAnswer.REGION_HEADER)).failure(what),
                        reusable);
            }
            String etag = answer.header("etag");
            if (etag == null) {
                throw new StoreException(StoreException.Kind.PROTOCOL, "PUT answered without an ETag: " + what, null);
            }
            return new Outcome<Object>(ObjectSummary.unquote(etag), reusable);
        });
        if (answered instanceof StoreException failure) {
            throw failure;
        }
        return (String) answered;
    }

    /** Returns whether the connection may serve another GET. */
    private boolean exchange(Connection connection, byte[] request, long offset, long length, String pinned, String what,
                             ObjectStore.BodyReader reader) throws IOException {
        ByteBuffer out = ByteBuffer.wrap(request);
        while (out.hasRemaining()) {
            connection.channel.write(out);
        }
        Head head = connection.readHead();
        int status = head.status();
        if (status == 200 || status == 206) {
            RangedGet.checkRange(status, head.header("content-range"), what, offset, length);
            RangedGet.checkETag(head.header("etag"), pinned, what);
            long contentLength = head.contentLength();
            if (contentLength < 0) {
                throw new Unsupported("an answer without Content-Length (" + head.header("transfer-encoding") + ")");
            }
            Body body = new Body(connection, contentLength);
            reader.read(body);
            return body.remaining == 0 && head.keepAlive();
        }
        long contentLength = head.contentLength();
        byte[] error = new Body(connection, contentLength < 0 ? 0 : Math.min(contentLength, ErrorAnswer.MAX_BODY)).readAllBytes();
        throw ErrorAnswer.of(status, error, head.header(ErrorAnswer.REGION_HEADER)).failure(what);
    }

    /** Opens a connection to {@code url}'s server, if none is idle, and keeps it for the next GET. */
    void connect(HttpUrl url) throws IOException {
        giveBack(take(url));
    }

    private Connection take(HttpUrl url) throws IOException {
        long now = System.nanoTime();
        for (Connection c; (c = idle.pollFirst()) != null; ) {
            if (now - c.idleSince < MAX_IDLE_NANOS) {
                c.reused = true;
                c.answered = false;
                return c;
            }
            c.close();
        }
        // every address of the host in turn, as OkHttp does: a name with an address that refuses or times
        // out (an IPv6 one on an IPv4-only path) still connects through the next
        IOException failure = null;
        for (InetAddress address : resolver.resolve(url.host())) {
            SocketChannel channel = SocketChannel.open();
            try {
                channel.socket().connect(new InetSocketAddress(address, url.port()), (int) connectTimeout.toMillis());
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                return new Connection(channel);
            } catch (IOException e) {
                channel.close();
                if (failure != null) {
                    e.addSuppressed(failure);
                }
                failure = e;
            } catch (RuntimeException e) {
                channel.close();
                throw e;
            }
        }
        throw failure != null ? failure : new UnknownHostException(url.host());
    }

    /** The addresses of a host name, in the order to try them. */
    @FunctionalInterface
    interface Resolver {
        Resolver SYSTEM = InetAddress::getAllByName;

        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    private void giveBack(Connection connection) {
        connection.idleSince = System.nanoTime();
        if (idle.size() < maxIdle) {
            idle.offerFirst(connection); // the most recent first: warm, and the old ones age out
        } else {
            connection.close();
        }
    }

    /** The request line and headers as they go on the wire. */
    static byte[] requestHead(Request request) {
        HttpUrl url = request.url();
        StringBuilder s = new StringBuilder(512).append(request.method()).append(' ').append(url.encodedPath());
        if (url.encodedQuery() != null) {
            s.append('?').append(url.encodedQuery());
        }
        s.append(" HTTP/1.1\r\n");
        Headers headers = request.headers();
        for (int i = 0; i < headers.size(); i++) {
            s.append(headers.name(i)).append(": ").append(headers.value(i)).append("\r\n");
        }
        return s.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() {
        for (Connection c; (c = idle.pollFirst()) != null; ) {
            c.close();
        }
    }

    /** One kept-alive socket and the buffer its answers' heads are read into. */
    private static final class Connection {
        final SocketChannel channel;
        /** Between reads: the bytes received and not yet taken, from position to limit. */
        final ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER);
        long idleSince;
        boolean reused;
        /** Whether a byte of the answer arrived (a failure before it on a reused socket is a stale socket). */
        boolean answered;
        volatile boolean expired;

        Connection(SocketChannel channel) {
            this.channel = channel;
        }

        /** Reads the status line and headers (after any 1xx answers); leaves the body's first bytes in the buffer. */
        Head readHead() throws IOException {
            buffer.clear();
            for (;;) {
                int end = headEnd(buffer);
                if (end < 0) {
                    if (!buffer.hasRemaining()) {
                        throw new IOException("answer head longer than " + BUFFER + " bytes");
                    }
                    if (channel.read(buffer) < 0) {
                        throw new EOFException(answered ? "connection closed in an answer's head" : "connection closed before an answer");
                    }
                    answered = true;
                    continue;
                }
                byte[] text = new byte[end];
                buffer.get(0, text);
                Head head = Head.parse(new String(text, StandardCharsets.ISO_8859_1));
                buffer.flip().position(end + 4);
                if (head.status() >= 200) {
                    return head;
                }
                buffer.compact(); // a 1xx answer (103 Early Hints): the real one follows
            }
        }

        /** The index of the blank line's CR in the bytes received so far, or -1. */
        private static int headEnd(ByteBuffer received) {
            for (int i = 3; i < received.position(); i++) {
                if (received.get(i) == '\n' && received.get(i - 1) == '\r' && received.get(i - 2) == '\n' && received.get(i - 3) == '\r') {
                    return i - 3;
                }
            }
            return -1;
        }

        void expire() {
            expired = true;
            close();
        }

        void close() {
            try {
                channel.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }

    /** An answer's status and headers (names in lower case; the first of a repeated one). */
    record Head(int status, boolean http11, Map<String, String> headers) {

        static Head parse(String text) throws IOException {
            String[] lines = text.split("\r\n", -1);
            String[] statusLine = lines[0].split(" ", 3);
            if (statusLine.length < 2 || !statusLine[0].startsWith("HTTP/1.")) {
                throw new IOException("not an HTTP/1.x answer: " + lines[0]);
            }
            int status;
            try {
                status = Integer.parseInt(statusLine[1]);
            } catch (NumberFormatException e) {
                throw new IOException("not an HTTP status: " + lines[0]);
            }
            Map<String, String> headers = new HashMap<>();
            for (int i = 1; i < lines.length; i++) {
                int colon = lines[i].indexOf(':');
                if (colon <= 0) {
                    throw new IOException("not an HTTP header: " + lines[i]);
                }
                headers.putIfAbsent(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
            }
            return new Head(status, statusLine[0].equals("HTTP/1.1"), headers);
        }

        String header(String name) {
            return headers.get(name);
        }

        /** The body's length; -1 when it has none given (a chunked or a close-delimited body). */
        long contentLength() throws IOException {
            String value = headers.get("content-length");
            if (value == null || headers.containsKey("transfer-encoding")) {
                return -1;
            }
            try {
                long length = Long.parseLong(value);
                if (length >= 0) {
                    return length;
                }
            } catch (NumberFormatException e) {
                // below
            }
            throw new IOException("not a Content-Length: " + value);
        }

        boolean keepAlive() {
            String connection = headers.get("connection");
            return http11 && (connection == null || !connection.equalsIgnoreCase("close"));
        }
    }

    /**
     * An answer's body: its Content-Length bytes, the first of them read with the head. Read it as a
     * channel to have the bytes land in the caller's buffer with no copy on the way; as a stream it
     * goes through the connection's buffer.
     */
    static final class Body extends InputStream implements ReadableByteChannel {
        private final Connection connection;
        private final long length;
        private long remaining;

        private Body(Connection connection, long length) {
            this.connection = connection;
            this.length = length;
            this.remaining = length;
        }

        @Override
        public int read(ByteBuffer target) throws IOException {
            if (remaining == 0) {
                return -1;
            }
            int want = (int) Math.min(target.remaining(), remaining);
            if (want == 0) {
                return 0;
            }
            ByteBuffer buffered = connection.buffer;
            int n;
            if (buffered.hasRemaining()) {
                n = Math.min(want, buffered.remaining());
                target.put(target.position(), buffered, buffered.position(), n);
                target.position(target.position() + n);
                buffered.position(buffered.position() + n);
            } else {
                int limit = target.limit();
                target.limit(target.position() + want);
                try {
                    n = connection.channel.read(target);
                } finally {
                    target.limit(limit);
                }
                ended(n);
            }
            remaining -= n;
            return n;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            java.util.Objects.checkFromIndexSize(off, len, b.length);
            if (remaining == 0) {
                return -1;
            }
            if (len == 0) {
                return 0;
            }
            ByteBuffer buffered = connection.buffer;
            if (!buffered.hasRemaining()) {
                buffered.clear().limit((int) Math.min(buffered.capacity(), remaining));
                int n = connection.channel.read(buffered);
                buffered.flip();
                ended(n);
            }
            int n = (int) Math.min(Math.min(len, buffered.remaining()), remaining);
            buffered.get(b, off, n);
            remaining -= n;
            return n;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        private void ended(int n) throws EOFException {
            if (n < 0) {
                throw new EOFException("body ended after " + (length - remaining) + " of " + length + " bytes");
            }
        }

        @Override
        public boolean isOpen() {
            return connection.channel.isOpen();
        }

        /** The connection is the GET's to keep or close. */
        @Override
        public void close() {
        }
    }
}
