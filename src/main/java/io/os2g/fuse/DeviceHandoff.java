package io.os2g.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Hands a mount's /dev/fuse descriptor to another process: a Unix datagram socket that the receiver
 * binds in a directory only the two of them can enter, and one datagram carrying the descriptor
 * (SCM_RIGHTS). The receiver then holds the same open file as the session, which is what lets it
 * answer the session's READs ({@link LentDeviceReplies}).
 */
public final class DeviceHandoff implements AutoCloseable {

    private final Path path;
    private final int socket;

    private DeviceHandoff(Path path, int socket) {
        this.path = path;
        this.socket = socket;
    }

    /** Binds the receiving socket at {@code path} (a stale file there is replaced). */
    public static DeviceHandoff listen(Path path) throws IOException {
        Files.deleteIfExists(path);
        int fd = Native.boundDatagramSocket(path.toString());
        if (fd < 0) {
            throw new IOException("cannot bind a socket at " + path + ": errno " + Native.errno());
        }
        return new DeviceHandoff(path, fd);
    }

    public Path path() {
        return path;
    }

    /**
     * The descriptor a {@link #send} left waiting, without waiting for one: -1 when none came, or what
     * came is not a FUSE device (it is closed then).
     */
    public int take() {
        int fd = Native.receiveDescriptor(socket, Native.MSG_DONTWAIT);
        if (fd < 0) {
            return -1;
        }
        try {
            if (Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).equals(Path.of("/dev/fuse"))) {
                return fd;
            }
        } catch (IOException | UnsupportedOperationException e) {
            // not ours to keep either way
        }
        Native.close(fd);
        return -1;
    }

    /**
     * Sends {@code device} to the socket a receiver bound at {@code path}; when this returns the
     * descriptor is waiting there for its {@link #take}.
     */
    public static void send(int device, Path path) throws IOException {
        if (Native.sendDescriptor(path.toString(), device) != 0) {
            throw new IOException("cannot send the FUSE descriptor to " + path + ": errno " + Native.errno());
        }
    }

    /** Closes the socket and removes its file; a descriptor sent and not taken is closed with it. */
    @Override
    public void close() {
        Native.close(socket);
        try {
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // the directory goes with the session anyway
        }
    }
}
