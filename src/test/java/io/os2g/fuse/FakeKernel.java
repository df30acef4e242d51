package io.os2g.fuse;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;

/**
 * The kernel's end of a FUSE connection, scripted: a {@code SOCK_SEQPACKET} socket pair keeps message
 * boundaries as /dev/fuse does, so a {@link FuseSession} serves the other end as it would a mount. A
 * request is one message; a reply may come in several (a reply spliced from a pipe is sent a few pages
 * at a time), joined here by the length in its out header. No root, no kernel mount.
 */
public final class FakeKernel implements AutoCloseable {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle SOCKETPAIR = handle("socketpair", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
    private static final MethodHandle WRITE = handle("write", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle READ = handle("read", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle POLL = handle("poll", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    private static final MethodHandle CLOSE = handle("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final int AF_UNIX = 1, SOCK_SEQPACKET = 5, SOCK_CLOEXEC = 0x80000;
    private static final short POLLIN = 1;

    public static final int INT_REQ_BIT = 1; // FUSE_INT_REQ_BIT: the unique of an INTERRUPT is its request's, with bit 0 set

    /** A reply as the kernel reads it. */
    public record Reply(long unique, int error, byte[] body) {
        ByteBuffer buffer() {
            return ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    private final Arena arena = Arena.ofShared();
    private final int kernelEnd;
    private final int sessionEnd;
    private final MemorySegment in = arena.allocate(4 << 20);
    private final MemorySegment pollfd = arena.allocate(8, 4);

    public FakeKernel() {
        MemorySegment sv = arena.allocate(ValueLayout.JAVA_INT, 2);
        try {
            if ((int) SOCKETPAIR.invokeExact(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
                throw new IllegalStateException("socketpair failed");
            }
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        kernelEnd = sv.getAtIndex(ValueLayout.JAVA_INT, 0);
        sessionEnd = sv.getAtIndex(ValueLayout.JAVA_INT, 1);
    }

    /** The descriptor a session serves, standing for /dev/fuse (the session closes it). */
    public int device() {
        return sessionEnd;
    }

    /** Sends one request: fuse_in_header (uid, gid, pid 0) and {@code body}. */
    public void send(int opcode, long unique, long node, byte[] body) {
        send(opcode, unique, node, 0, body);
    }

    /** Sends one request from thread {@code pid}. */
    public void send(int opcode, long unique, long node, int pid, byte[] body) {
        ByteBuffer b = ByteBuffer.allocate(40 + body.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(40 + body.length).putInt(opcode).putLong(unique).putLong(node).putInt(0).putInt(0).putInt(pid).putInt(0);
        b.put(body);
        sendRaw(b.array());
    }

    /** Sends {@code bytes} as one message, whatever they are. */
    void sendRaw(byte[] bytes) {
        MemorySegment m = arena.allocate(Math.max(1, bytes.length));
        MemorySegment.copy(bytes, 0, m, ValueLayout.JAVA_BYTE, 0, bytes.length);
        try {
            long n = (long) WRITE.invokeExact(kernelEnd, m, (long) bytes.length);
            if (n != bytes.length) {
                throw new IllegalStateException("request not sent whole: " + n);
            }
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** The next reply, or null when none comes within {@code timeout}. */
    public Reply receive(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        ByteArrayOutputStream whole = new ByteArrayOutputStream();
        int length = -1;
        while (length < 0 || whole.size() < length) {
            long left = Math.max(0, (deadline - System.nanoTime()) / 1_000_000);
            if (!readable((int) left)) {
                if (whole.size() > 0) {
                    throw new IllegalStateException("a reply cut short: " + whole.size() + " of " + length + " bytes");
                }
                return null;
            }
            long n;
            try {
                n = (long) READ.invokeExact(kernelEnd, in, in.byteSize());
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
            if (n <= 0) {
                throw new IllegalStateException("the session's end closed");
            }
            whole.write(in.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE), 0, (int) n);
            if (length < 0) {
                length = in.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
            }
        }
        ByteBuffer b = ByteBuffer.wrap(whole.toByteArray()).order(ByteOrder.LITTLE_ENDIAN);
        if (b.limit() != length) {
            throw new IllegalStateException("a reply longer than its header says: " + b.limit() + " > " + length);
        }
        int error = b.getInt(4);
        long unique = b.getLong(8);
        byte[] body = new byte[length - 16];
        b.get(16, body);
        return new Reply(unique, error, body);
    }

    private boolean readable(int timeoutMillis) {
        pollfd.set(ValueLayout.JAVA_INT, 0, kernelEnd);
        pollfd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        pollfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        try {
            return (int) POLL.invokeExact(pollfd, 1L, timeoutMillis) > 0;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** fuse_init_in of {@code major}.{@code minor} offering {@code flags} (and flags2 with FUSE_INIT_EXT). */
    public static byte[] init(int major, int minor, int readahead, int flags, int flags2) {
        ByteBuffer b = ByteBuffer.allocate(minor >= 36 ? 64 : 16).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(major).putInt(minor).putInt(readahead).putInt(flags);
        if (minor >= 36) {
            b.putInt(flags2);
        }
        return b.array();
    }

    /** fuse_read_in. */
    static byte[] read(long handle, long offset, int size) {
        return ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN).putLong(handle).putLong(offset).putInt(size).array();
    }

    static byte[] longs(long... values) {
        ByteBuffer b = ByteBuffer.allocate(8 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long v : values) {
            b.putLong(v);
        }
        return b.array();
    }

    /** {@code head} followed by each name with its NUL. */
    static byte[] withNames(byte[] head, String... names) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        out.writeBytes(head);
        for (String n : names) {
            out.writeBytes(name(n));
        }
        return out.toByteArray();
    }

    static byte[] name(String name) {
        byte[] n = name.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        return java.util.Arrays.copyOf(n, n.length + 1);
    }

    /** Hangs up the kernel's end: the session's threads read end-of-file and stop. */
    @Override
    public void close() {
        try {
            int rc = (int) CLOSE.invokeExact(kernelEnd);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        arena.close();
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), descriptor);
    }
}
