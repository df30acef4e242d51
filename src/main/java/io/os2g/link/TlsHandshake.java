package io.os2g.link;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.SSLSocket;
import jdk.net.ExtendedSocketOptions;

/**
 * How the two ends of a network link meet. Every connection starts with mutual TLS 1.3; the shim then
 * asks on it for an encrypted link ({@code E}) or a plain one ({@code P}), and the agent answers: over
 * this TLS connection ({@code E}), or, where both were told the link is physically private, with a
 * single-use token ({@code T}) that the shim presents first on a second, plain connection, which then
 * carries the link unencrypted: the peers are authenticated by the handshake, the bytes are not
 * protected after it. A connection that starts with neither a TLS hello nor a token is refused.
 */
final class TlsHandshake {

    private static final byte TLS_HANDSHAKE_RECORD = 0x16;
    private static final byte[] TOKEN_MAGIC = {'O', 'S', '2', 'T'};
    private static final int TOKEN_BYTES = 32;
    private static final Duration TOKEN_LIFE = Duration.ofSeconds(30);
    /** How long a peer may take to say who it is before the connection is dropped. */
    static final Duration HANDSHAKE_DEADLINE = Duration.ofSeconds(15);

    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * Closes a connection whose peer has not finished meeting in time. A deadline of this kind, not a
     * socket timeout: a timed connect or read turns the channel non-blocking for good, and every later
     * read of the link would then be read(2), EAGAIN, poll(2), read(2).
     */
    private static final java.util.concurrent.ScheduledExecutorService DEADLINES = java.util.concurrent.Executors
            .newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("os2g-link-handshake").factory());

    /** Closes {@code channel} at the handshake deadline unless the returned handle is cancelled first. */
    private static java.util.concurrent.ScheduledFuture<?> deadline(SocketChannel channel) {
        return DEADLINES.schedule(() -> {
            try {
                channel.close();
            } catch (IOException ignored) {
                // closing
            }
        }, HANDSHAKE_DEADLINE.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    }

    private TlsHandshake() {
    }

    /** Tokens the agent handed out and not yet presented, with when they expire. */
    static final class Tokens {
        private final ConcurrentHashMap<String, Long> issued = new ConcurrentHashMap<>();

        byte[] issue() {
            byte[] token = new byte[TOKEN_BYTES];
            RANDOM.nextBytes(token);
            issued.values().removeIf(expiry -> expiry - System.nanoTime() < 0);
            issued.put(Base64.getEncoder().encodeToString(token), System.nanoTime() + TOKEN_LIFE.toNanos());
            return token;
        }

        /** Whether {@code token} was issued and is unexpired; it is spent either way. */
        boolean redeem(byte[] token) {
            Long expiry = issued.remove(Base64.getEncoder().encodeToString(token));
            return expiry != null && expiry - System.nanoTime() > 0;
        }
    }

    /** Dials {@code address}: TLS, then the link the agent chooses. */
    static LinkStream dial(LinkAddress.Tcp address, LinkTls tls) throws IOException {
        InetSocketAddress to = address.socketAddress();
        SocketChannel channel = SocketChannel.open();
        var deadline = deadline(channel);
        SSLSocket socket;
        byte mode;
        byte[] token = new byte[TOKEN_BYTES];
        try {
            channel.connect(to);
            tune(channel);
            socket = tls.configure((SSLSocket) tls.context().getSocketFactory().createSocket(channel.socket(), address.host(),
                    address.port(), true), false);
            socket.startHandshake();
            socket.getOutputStream().write(tls.encrypt() ? 'E' : 'P');
            socket.getOutputStream().flush();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            mode = in.readByte();
            if (mode == 'T') {
                in.readFully(token);
            } else if (mode != 'E') {
                throw new IOException("the agent at " + address + " answered the TLS handshake with mode " + mode);
            }
        } catch (IOException e) {
            channel.close();
            throw e;
        } finally {
            deadline.cancel(false);
        }
        if (mode == 'E') {
            return LinkStream.of(socket, address.toString());
        }
        socket.close();
        SocketChannel plain = SocketChannel.open();
        var plainDeadline = deadline(plain);
        try {
            plain.connect(to);
            tune(plain);
            ByteBuffer hello = ByteBuffer.allocate(TOKEN_MAGIC.length + TOKEN_BYTES).put(TOKEN_MAGIC).put(token).flip();
            while (hello.hasRemaining()) {
                plain.write(hello);
            }
        } catch (IOException e) {
            plain.close();
            throw e;
        } finally {
            plainDeadline.cancel(false);
        }
        return LinkStream.of(plain, address.toString());
    }

    /**
     * No delay for small frames, and keepalive probes soon enough that a peer gone without a word (a
     * machine off, a cable out) ends the connection within about 20 s, so the shim dials again.
     */
    static void tune(SocketChannel channel) throws IOException {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        channel.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        try {
            channel.setOption(ExtendedSocketOptions.TCP_KEEPIDLE, 10);
            channel.setOption(ExtendedSocketOptions.TCP_KEEPINTERVAL, 3);
            channel.setOption(ExtendedSocketOptions.TCP_KEEPCOUNT, 3);
        } catch (UnsupportedOperationException e) {
            // the platform's defaults
        }
    }

    /**
     * The agent's side of a new connection: a TLS handshake (then the link on it, or a token for a
     * plain one), or a token from an earlier handshake.
     *
     * @return the link, or null when this connection only handed out a token
     * @throws IOException when the peer is refused (no certificate from the CA, no TLS, a bad token)
     */
    static LinkStream accept(SocketChannel channel, LinkTls tls, Tokens tokens) throws IOException {
        var deadline = deadline(channel);
        try {
            return meet(channel, tls, tokens);
        } finally {
            deadline.cancel(false);
        }
    }

    private static LinkStream meet(SocketChannel channel, LinkTls tls, Tokens tokens) throws IOException {
        tune(channel);
        String peer = String.valueOf(channel.getRemoteAddress());
        Socket raw = channel.socket();
        byte[] first = new byte[1];
        if (raw.getInputStream().readNBytes(first, 0, 1) < 1) {
            throw new IOException("closed before it said anything");
        }
        if (first[0] == TLS_HANDSHAKE_RECORD) {
            SSLSocket socket = tls.configure((SSLSocket) tls.context().getSocketFactory().createSocket(raw,
                    new ByteArrayInputStream(first), true), true);
            socket.startHandshake();
            int asked = socket.getInputStream().read();
            if (asked != 'E' && asked != 'P') {
                throw new IOException("a peer that asked for link mode " + asked);
            }
            if (tls.encrypt() || asked == 'E') {
                socket.getOutputStream().write('E');
                socket.getOutputStream().flush();
                return LinkStream.of(socket, peer);
            }
            byte[] token = tokens.issue();
            socket.getOutputStream().write('T');
            socket.getOutputStream().write(token);
            socket.getOutputStream().flush();
            socket.close();
            return null;
        }
        if (first[0] == TOKEN_MAGIC[0]) {
            byte[] rest = raw.getInputStream().readNBytes(TOKEN_MAGIC.length - 1 + TOKEN_BYTES);
            byte[] token = java.util.Arrays.copyOfRange(rest, TOKEN_MAGIC.length - 1, rest.length);
            if (tls.encrypt() || rest.length != TOKEN_MAGIC.length - 1 + TOKEN_BYTES || rest[0] != 'S' || rest[1] != '2'
                    || rest[2] != 'T' || !tokens.redeem(token)) {
                throw new IOException("a plain connection without a valid token (links to this agent "
                        + (tls.encrypt() ? "are encrypted" : "authenticate with TLS first") + ")");
            }
            return LinkStream.of(channel, peer);
        }
        throw new IOException("not TLS (a link to this agent starts with mutual TLS)");
    }
}
