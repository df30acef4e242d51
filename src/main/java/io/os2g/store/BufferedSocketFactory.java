package io.os2g.store;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import javax.net.SocketFactory;

/**
 * Plain sockets whose input is taken from the kernel in large reads. OkHttp reads a response through
 * okio 8 KiB at a time, one read(2) per segment: 1,024 system calls for an 8 MiB chunk, 16 for a 125 KB
 * file. With a buffer under okio, one call takes whatever the socket holds, up to
 * {@link #BUFFER}. TLS sockets are layered on these, so their records are read the same way.
 */
final class BufferedSocketFactory extends SocketFactory {

    static final int BUFFER = 128 * 1024;

    @Override
    public Socket createSocket() {
        return new BufferedInputSocket();
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        return connected(new InetSocketAddress(host, port));
    }

    @Override
    public Socket createSocket(InetAddress address, int port) throws IOException {
        return connected(new InetSocketAddress(address, port));
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localAddress, int localPort) throws IOException {
        return connected(new InetSocketAddress(host, port), new InetSocketAddress(localAddress, localPort));
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort) throws IOException {
        return connected(new InetSocketAddress(address, port), new InetSocketAddress(localAddress, localPort));
    }

    private static Socket connected(InetSocketAddress remote) throws IOException {
        return connected(remote, null);
    }

    private static Socket connected(InetSocketAddress remote, InetSocketAddress local) throws IOException {
        Socket socket = new BufferedInputSocket();
        try {
            if (local != null) {
                socket.bind(local);
            }
            socket.connect(remote);
            return socket;
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    private static final class BufferedInputSocket extends Socket {
        private InputStream in;

        @Override
        public synchronized InputStream getInputStream() throws IOException {
            if (in == null) {
                in = new BufferedInputStream(super.getInputStream(), BUFFER);
            }
            return in;
        }
    }
}
