package io.os2g.fuse;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The libc calls the FUSE device needs, through FFM, each with the errno of the call captured (a
 * later JVM-internal call may overwrite the thread's errno before Java could read it).
 *
 * <p>Architectures: the constants here are the asm-generic ones, which x86-64 and arm64 share; the
 * socket structs are laid out from the platform's C types ({@link Linker#canonicalLayouts}), and the
 * page size is the running kernel's (4 KiB, or 16/64 KiB on many arm64 kernels).
 */
final class Native {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> STATE = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CALL_STATE));

    /** size_t: 8 bytes on every platform os2g runs on (LP64); the iovecs of the replies assume it too. */
    private static final MemoryLayout SIZE_T = lp64(LINKER.canonicalLayouts().get("size_t"));
    private static final MemoryLayout INT = LINKER.canonicalLayouts().get("int");
    /** struct iovec. */
    private static final StructLayout IOVEC = MemoryLayout.structLayout(
            ValueLayout.ADDRESS.withName("iov_base"), SIZE_T.withName("iov_len"));
    /** struct msghdr (glibc): the padding after the ints is the C compiler's. */
    private static final StructLayout MSGHDR = MemoryLayout.structLayout(
            ValueLayout.ADDRESS.withName("msg_name"), INT.withName("msg_namelen"),
            MemoryLayout.paddingLayout(ValueLayout.ADDRESS.byteSize() - INT.byteSize()),
            ValueLayout.ADDRESS.withName("msg_iov"), SIZE_T.withName("msg_iovlen"),
            ValueLayout.ADDRESS.withName("msg_control"), SIZE_T.withName("msg_controllen"),
            INT.withName("msg_flags"), MemoryLayout.paddingLayout(ValueLayout.ADDRESS.byteSize() - INT.byteSize()));
    /** struct cmsghdr and one descriptor after it: CMSG_SPACE(sizeof(int)) bytes, CMSG_LEN of them in use. */
    private static final StructLayout CMSG_FD = MemoryLayout.structLayout(
            SIZE_T.withName("cmsg_len"), INT.withName("cmsg_level"), INT.withName("cmsg_type"),
            INT.withName("fd"), MemoryLayout.paddingLayout(SIZE_T.byteSize() - INT.byteSize()));
    static final long CMSG_FD_LEN = CMSG_FD.byteOffset(MemoryLayout.PathElement.groupElement("fd")) + INT.byteSize();

    static final int O_RDWR = 2;
    static final int O_CLOEXEC = 0x80000;
    static final int MSG_DONTWAIT = 0x40;
    private static final int MSG_NOSIGNAL = 0x4000;
    private static final int MSG_CMSG_CLOEXEC = 0x40000000;
    private static final int AF_UNIX = 1;
    private static final int SOCK_DGRAM = 2;
    private static final int SOCK_CLOEXEC = 0x80000;
    private static final int SOL_SOCKET = 1;
    private static final int SCM_RIGHTS = 1;

    private static final MethodHandle OPEN = handle("open", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = handle("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle STATX = handle("statx", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
    private static final MethodHandle READ = handle("read", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle WRITEV = handle("writev", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle IOCTL = handle("ioctl", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle MOUNT = handle("mount", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
    private static final MethodHandle UMOUNT2 = handle("umount2", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_INT));

    private static final MethodHandle SOCKETPAIR = handle("socketpair", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
    private static final MethodHandle RECVMSG = handle("recvmsg", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle SOCKET = handle("socket", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle BIND = handle("bind", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle SENDMSG = handle("sendmsg", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle POSIX_SPAWNP = handle("posix_spawnp", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    private static final MethodHandle WAITPID = handle("waitpid", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));

    private static final MethodHandle PIPE2 = handle("pipe2", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle FCNTL = handle("fcntl", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle WRITE = handle("write", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle GETPAGESIZE = handle("getpagesize", FunctionDescriptor.of(ValueLayout.JAVA_INT));
    private static final MethodHandle PREAD = handle("pread", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
    private static final MethodHandle SPLICE = handle("splice", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_INT));

    private Native() {
    }

    private static MemoryLayout lp64(MemoryLayout sizeT) {
        if (sizeT.byteSize() != 8 || ValueLayout.ADDRESS.byteSize() != 8) {
            throw new UnsupportedOperationException("os2g runs on 64-bit Linux (x86-64, arm64) only");
        }
        return sizeT;
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        Linker.Option[] all = java.util.Arrays.copyOf(options, options.length + 1);
        all[options.length] = Linker.Option.captureCallState("errno");
        MethodHandle h = LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), descriptor, all);
        return h;
    }

    /** The running kernel's page size, in bytes. */
    static int pageSize() {
        try {
            return (int) GETPAGESIZE.invokeExact(STATE.get());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** errno of this thread's last call through this class. */
    static int errno() {
        return (int) ERRNO.get(STATE.get(), 0L);
    }

    static int open(String path, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            return (int) OPEN.invokeExact(STATE.get(), arena.allocateFrom(path), flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** struct statx: its size, and the offsets of the fields read here (the same on every architecture). */
    static final int STATX_SIZE = 256, STATX_INO_AT = 32, STATX_SIZE_AT = 40, STATX_CTIME_SEC_AT = 96, STATX_CTIME_NSEC_AT = 104;
    private static final int AT_EMPTY_PATH = 0x1000;
    private static final int STATX_CTIME = 0x80, STATX_INO = 0x100, STATX_SIZE_MASK = 0x200;

    /** statx(2) of open file {@code fd} into {@code buffer} ({@link #STATX_SIZE} bytes): its inode, size and change time. */
    static int fstatx(int fd, MemorySegment buffer) {
        try (Arena arena = Arena.ofConfined()) {
            return (int) STATX.invokeExact(STATE.get(), fd, arena.allocateFrom(""), AT_EMPTY_PATH,
                    STATX_INO | STATX_SIZE_MASK | STATX_CTIME, buffer);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int close(int fd) {
        try {
            return (int) CLOSE.invokeExact(STATE.get(), fd);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long read(int fd, MemorySegment buffer) {
        try {
            return (long) READ.invokeExact(STATE.get(), fd, buffer, buffer.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** writev(2) of {@code count} iovecs laid out in {@code iov} (address, length pairs). */
    static long writev(int fd, MemorySegment iov, int count) {
        try {
            return (long) WRITEV.invokeExact(STATE.get(), fd, iov, count);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int ioctl(int fd, long request, MemorySegment argument) {
        try {
            return (int) IOCTL.invokeExact(STATE.get(), fd, request, argument);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int mount(String source, String target, String type, long flags, String data) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment typeName = type == null ? MemorySegment.NULL : arena.allocateFrom(type);
            MemorySegment options = data == null ? MemorySegment.NULL : arena.allocateFrom(data);
            return (int) MOUNT.invokeExact(STATE.get(), arena.allocateFrom(source), arena.allocateFrom(target), typeName, flags, options);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int umount2(String target, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            return (int) UMOUNT2.invokeExact(STATE.get(), arena.allocateFrom(target), flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A close-on-exec pipe, {read end, write end}, or null. */
    static int[] pipe() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment fds = arena.allocate(ValueLayout.JAVA_INT, 2);
            int rc = (int) PIPE2.invokeExact(STATE.get(), fds, O_CLOEXEC);
            return rc != 0 ? null : new int[] {fds.getAtIndex(ValueLayout.JAVA_INT, 0), fds.getAtIndex(ValueLayout.JAVA_INT, 1)};
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int fcntl(int fd, int command, int argument) {
        try {
            return (int) FCNTL.invokeExact(STATE.get(), fd, command, argument);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static long write(int fd, MemorySegment bytes) {
        try {
            return (long) WRITE.invokeExact(STATE.get(), fd, bytes, bytes.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** pread(2) into {@code buffer}: the bytes read, 0 at the end of the file, -1 on failure. */
    static long pread(int fd, MemorySegment buffer, long offset) {
        try {
            return (long) PREAD.invokeExact(STATE.get(), fd, buffer, buffer.byteSize(), offset);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** splice(2) from {@code in} at {@code *offset} (advanced), or from a pipe when offset is NULL. */
    static long splice(int in, MemorySegment offset, int out, long length, int flags) {
        try {
            return (long) SPLICE.invokeExact(STATE.get(), in, offset, out, MemorySegment.NULL, length, flags);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A connected pair of Unix stream sockets, inheritable by a child process; null on failure. */
    static int[] socketpair() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sv = arena.allocate(ValueLayout.JAVA_INT, 2);
            int rc = (int) SOCKETPAIR.invokeExact(STATE.get(), 1 /* AF_UNIX */, 1 /* SOCK_STREAM */, 0, sv);
            return rc != 0 ? null : new int[] {sv.getAtIndex(ValueLayout.JAVA_INT, 0), sv.getAtIndex(ValueLayout.JAVA_INT, 1)};
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Receives one byte and the one descriptor that came with it (SCM_RIGHTS) on socket {@code fd}; -1
     * when the peer closed without sending one.
     */
    static int receiveDescriptor(int fd) {
        return receiveDescriptor(fd, 0);
    }

    /**
     * {@link #receiveDescriptor(int)} with recvmsg {@code flags} (MSG_DONTWAIT: -1 at once when nothing
     * waits); a descriptor received is close-on-exec.
     */
    static int receiveDescriptor(int fd, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(1);
            MemorySegment control = arena.allocate(CMSG_FD);
            MemorySegment msg = message(arena, MemorySegment.NULL, 0, data, control);
            long n;
            do {
                n = (long) RECVMSG.invokeExact(STATE.get(), fd, msg, flags | MSG_CMSG_CLOEXEC);
            } while (n < 0 && errno() == FuseErrno.EINTR);
            boolean rights = n > 0 && size(msg, MSGHDR, "msg_controllen") >= CMSG_FD_LEN
                    && get(control, CMSG_FD, "cmsg_level") == SOL_SOCKET && get(control, CMSG_FD, "cmsg_type") == SCM_RIGHTS;
            return rights ? get(control, CMSG_FD, "fd") : -1;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** A Unix datagram socket bound at {@code path}, or -1 (errno says why). */
    static int boundDatagramSocket(String path) {
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) SOCKET.invokeExact(STATE.get(), AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                return -1;
            }
            MemorySegment address = unixAddress(arena, path);
            if ((int) BIND.invokeExact(STATE.get(), fd, address, (int) address.byteSize()) != 0) {
                int errno = errno();
                close(fd);
                ERRNO.set(STATE.get(), 0L, errno);
                return -1;
            }
            return fd;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Sends one byte and descriptor {@code passed} (SCM_RIGHTS) to the datagram socket at {@code path}; 0 or -1. */
    static int sendDescriptor(String path, int passed) {
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) SOCKET.invokeExact(STATE.get(), AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                return -1;
            }
            try {
                MemorySegment address = unixAddress(arena, path);
                MemorySegment control = arena.allocate(CMSG_FD);
                setSize(control, CMSG_FD, "cmsg_len", CMSG_FD_LEN);
                set(control, CMSG_FD, "cmsg_level", SOL_SOCKET);
                set(control, CMSG_FD, "cmsg_type", SCM_RIGHTS);
                set(control, CMSG_FD, "fd", passed);
                MemorySegment msg = message(arena, address, (int) address.byteSize(), arena.allocate(1), control);
                long n;
                do {
                    n = (long) SENDMSG.invokeExact(STATE.get(), fd, msg, MSG_NOSIGNAL);
                } while (n < 0 && errno() == FuseErrno.EINTR);
                return n == 1 ? 0 : -1;
            } finally {
                int errno = errno();
                close(fd);
                ERRNO.set(STATE.get(), 0L, errno);
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** struct msghdr with one iovec over {@code data} and the ancillary buffer {@code control}. */
    static MemorySegment message(Arena arena, MemorySegment name, int nameLength, MemorySegment data, MemorySegment control) {
        MemorySegment iov = arena.allocate(IOVEC);
        iov.set(ValueLayout.ADDRESS, offset(IOVEC, "iov_base"), data);
        setSize(iov, IOVEC, "iov_len", data.byteSize());
        MemorySegment msg = arena.allocate(MSGHDR);
        msg.set(ValueLayout.ADDRESS, offset(MSGHDR, "msg_name"), name);
        set(msg, MSGHDR, "msg_namelen", nameLength);
        msg.set(ValueLayout.ADDRESS, offset(MSGHDR, "msg_iov"), iov);
        setSize(msg, MSGHDR, "msg_iovlen", 1);
        msg.set(ValueLayout.ADDRESS, offset(MSGHDR, "msg_control"), control);
        setSize(msg, MSGHDR, "msg_controllen", control.byteSize());
        return msg;
    }

    private static long offset(StructLayout layout, String field) {
        return layout.byteOffset(MemoryLayout.PathElement.groupElement(field));
    }

    private static int get(MemorySegment s, StructLayout layout, String field) {
        return s.get(ValueLayout.JAVA_INT, offset(layout, field));
    }

    private static void set(MemorySegment s, StructLayout layout, String field, int value) {
        s.set(ValueLayout.JAVA_INT, offset(layout, field), value);
    }

    /** A size_t field (8 bytes: os2g runs on LP64 Linux, x86-64 and arm64; see {@link #SIZE_T}). */
    static long size(MemorySegment s, StructLayout layout, String field) {
        return s.get(ValueLayout.JAVA_LONG, offset(layout, field));
    }

    static void setSize(MemorySegment s, StructLayout layout, String field, long value) {
        s.set(ValueLayout.JAVA_LONG, offset(layout, field), value);
    }

    /** The struct layouts this class builds, for a test to check against the C ABI's sizes. */
    static StructLayout[] socketStructs() {
        return new StructLayout[] {IOVEC, MSGHDR, CMSG_FD};
    }

    /** struct sockaddr_un for {@code path}, sized to the path (sun_family, then the NUL-ended path). */
    private static MemorySegment unixAddress(Arena arena, String path) {
        byte[] bytes = path.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (bytes.length >= 108) {
            throw new IllegalArgumentException("socket path longer than 107 bytes: " + path);
        }
        MemorySegment address = arena.allocate(2 + bytes.length + 1, 2);
        address.set(ValueLayout.JAVA_SHORT, 0, (short) AF_UNIX);
        MemorySegment.copy(bytes, 0, address, ValueLayout.JAVA_BYTE, 2, bytes.length);
        return address;
    }

    /**
     * Runs {@code argv} (found on PATH) with {@code env}, inheriting this process's descriptors that are
     * not close-on-exec, and waits for it: its exit status, or -1 if it did not exit normally.
     */
    static int spawnAndWait(java.util.List<String> argv, java.util.List<String> env) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = strings(arena, argv);
            MemorySegment envp = strings(arena, env);
            MemorySegment pid = arena.allocate(ValueLayout.JAVA_INT);
            int rc = (int) POSIX_SPAWNP.invokeExact(STATE.get(), pid, arena.allocateFrom(argv.get(0)),
                    MemorySegment.NULL, MemorySegment.NULL, args, envp);
            if (rc != 0) {
                throw new IllegalStateException("cannot run " + argv.get(0) + ": errno " + rc);
            }
            MemorySegment status = arena.allocate(ValueLayout.JAVA_INT);
            int waited;
            do {
                waited = (int) WAITPID.invokeExact(STATE.get(), pid.get(ValueLayout.JAVA_INT, 0), status, 0);
            } while (waited < 0 && errno() == FuseErrno.EINTR);
            int s = status.get(ValueLayout.JAVA_INT, 0);
            return waited < 0 || (s & 0x7f) != 0 ? -1 : (s >> 8) & 0xff;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static MemorySegment strings(Arena arena, java.util.List<String> values) {
        MemorySegment array = arena.allocate(ValueLayout.ADDRESS, values.size() + 1);
        for (int i = 0; i < values.size(); i++) {
            array.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(values.get(i)));
        }
        array.setAtIndex(ValueLayout.ADDRESS, values.size(), MemorySegment.NULL);
        return array;
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }
}
