package io.os2g.fuse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A serving thread's reply to every request but a READ ({@link PipedReply} builds those): the out
 * header and a small struct in native memory, or the header and a separate data buffer, written to
 * /dev/fuse with one writev. One request at a time: {@link #start} each time.
 */
final class SmallReply {

    private static final Logger LOG = LoggerFactory.getLogger(SmallReply.class);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    static final int HEADER = FuseAbi.OutHeader.SIZE;
    /** Room for the largest struct a reply carries (fuse_entry_out, 128 bytes), zeroed per request. */
    static final int BODY = 240;

    private final int device;
    private final MemorySegment out;
    private final MemorySegment body;
    private final MemorySegment iov;
    private long unique;

    SmallReply(int device, Arena arena) {
        this.device = device;
        this.out = arena.allocate(HEADER + BODY, 8);
        this.body = out.asSlice(HEADER);
        this.iov = arena.allocate(32, 8);
    }

    /** Begins the reply to request {@code unique}, with a zeroed body (unused fields stay 0). */
    void start(long unique) {
        this.unique = unique;
        out.fill((byte) 0);
    }

    /** The reply's body (the struct after the out header), to fill before {@link #send}. */
    MemorySegment body() {
        return body;
    }

    /** Sends the header and the first {@code bodyLength} bytes of {@link #body}. */
    void send(int bodyLength) {
        header(HEADER + bodyLength, 0);
        iov.set(LONG, 8, HEADER + bodyLength);
        write(1);
    }

    /** Sends the header and {@code data} (a listing, an attribute value) instead of {@link #body}. */
    void send(MemorySegment data) {
        header((int) (HEADER + data.byteSize()), 0);
        iov.set(LONG, 8, HEADER);
        iov.set(ValueLayout.ADDRESS, 16, data);
        iov.set(LONG, 24, data.byteSize());
        write(2);
    }

    /** getxattr/listxattr: the size when asked for 0 bytes, the bytes when they fit, else ERANGE. */
    void sendBytes(byte[] value, int size) {
        if (size == 0) {
            body.set(INT, FuseAbi.SmallIn.GETXATTR_OUT_SIZE, value.length);
            send(FuseAbi.SmallIn.GETXATTR_OUT_BYTES);
        } else if (value.length > size) {
            error(FuseErrno.ERANGE);
        } else {
            MemorySegment bytes = Arena.ofAuto().allocate(Math.max(value.length, 1));
            MemorySegment.copy(value, 0, bytes, ValueLayout.JAVA_BYTE, 0, value.length);
            send(bytes.asSlice(0, value.length));
        }
    }

    void error(int errno) {
        header(HEADER, -errno);
        iov.set(LONG, 8, HEADER);
        write(1);
    }

    private void header(int length, int error) {
        out.set(INT, FuseAbi.OutHeader.LEN, length);
        out.set(INT, FuseAbi.OutHeader.ERROR, error);
        out.set(LONG, FuseAbi.OutHeader.UNIQUE, unique);
        iov.set(ValueLayout.ADDRESS, 0, out);
    }

    private void write(int count) {
        if (Native.writev(device, iov, count) < 0) {
            int errno = Native.errno();
            // ENOENT: the request was interrupted and is gone; anything else is a protocol error of ours
            if (errno != FuseErrno.ENOENT) {
                LOG.error("FUSE reply refused by the kernel: errno {}", errno);
            }
        }
    }
}
