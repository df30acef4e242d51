package io.os2g.link;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/** Where an agent listens and a shim dials: a Unix socket on this machine, or a TCP port on another. */
public sealed interface LinkAddress {

    /** A Unix socket: the agent shares this machine's kernel. */
    record Unix(Path path) implements LinkAddress {
        @Override
        public String toString() {
            return "unix:" + path;
        }
    }

    /** A TCP port: the agent on a DPU or another node, always behind mutual TLS. */
    record Tcp(String host, int port) implements LinkAddress {
        public InetSocketAddress socketAddress() {
            return new InetSocketAddress(host, port);
        }

        /** Whether the address is this machine's own (the only place a listener without certificates may bind). */
        public boolean loopback() {
            InetSocketAddress a = socketAddress();
            return !a.isUnresolved() && a.getAddress().isLoopbackAddress();
        }

        @Override
        public String toString() {
            return "tcp://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
        }
    }

    /**
     * Parses {@code unix:PATH} or {@code tcp://HOST:PORT} (an IPv6 host in brackets).
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    static LinkAddress parse(String text) {
        if (text.startsWith("unix:")) {
            String path = text.substring("unix:".length());
            if (path.isEmpty()) {
                throw new IllegalArgumentException("unix: needs a socket path, as in unix:/run/os2g/agent.sock");
            }
            return new Unix(Path.of(path));
        }
        if (text.startsWith("tcp://")) {
            String rest = text.substring("tcp://".length());
            int colon = rest.lastIndexOf(':');
            if (colon <= 0 || colon == rest.length() - 1) {
                throw new IllegalArgumentException("tcp:// needs HOST:PORT, as in tcp://198.18.0.2:7070: " + text);
            }
            String host = rest.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            int port;
            try {
                port = Integer.parseInt(rest.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a port number in " + text);
            }
            if (port < 0 || port > 65535 || host.isEmpty()) {
                throw new IllegalArgumentException("no host or a port out of range in " + text);
            }
            return new Tcp(host, port);
        }
        throw new IllegalArgumentException("an agent address is unix:PATH or tcp://HOST:PORT, not " + text);
    }
}
