package io.os2g.link;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.WritableByteChannel;
import javax.net.ssl.SSLSocket;

/**
 * One connected link, whatever carries it: streams for frames, and channels over the same bytes for
 * the bulk bytes that follow a post (a socket channel reads into and sends from native memory; over
 * TLS the channels wrap the streams, {@link StreamChannels}).
 *
 * @param peer who is at the other end, for log lines
 * @param encrypted whether the bytes are encrypted on the way (TLS), for stats
 */
record LinkStream(InputStream in, OutputStream out, ReadableByteChannel rawIn, WritableByteChannel rawOut, Closeable closer,
                  String peer, boolean encrypted) implements Closeable {

    /** A socket channel (Unix or plain TCP after authentication); blocking. */
    static LinkStream of(SocketChannel channel, String peer) {
        return new LinkStream(SocketChannelStreams.in(channel), SocketChannelStreams.out(channel), channel, channel, channel,
                peer, false);
    }

    /** A TLS socket whose handshake is done. */
    static LinkStream of(SSLSocket socket, String peer) throws IOException {
        InputStream in = socket.getInputStream();
        OutputStream out = socket.getOutputStream();
        return new LinkStream(in, out, StreamChannels.readable(in), StreamChannels.writable(out), socket, peer, true);
    }

    @Override
    public void close() {
        try {
            closer.close();
        } catch (IOException ignored) {
            // closing
        }
    }
}
