package io.os2g.csi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The system calls of the node plugin: bind mounts, and starting a mount process that outlives the
 * plugin (its own session, the FUSE descriptor as fd 3, nothing else of the plugin's inherited).
 */
final class Libc {

    static final int EINVAL = 22;
    static final int ENOENT = 2;
    static final long MS_RDONLY = 1;
    static final long MS_NOSUID = 2;
    static final long MS_NODEV = 4;
    static final long MS_NOEXEC = 8;
    private static final long MS_REMOUNT = 32;
    static final long MS_NOATIME = 1024;
    static final long MS_NODIRATIME = 2048;
    private static final long MS_BIND = 4096;
    private static final int MNT_DETACH = 2;
    private static final int O_RDONLY = 0;
    private static final int O_WRONLY = 1;
    private static final int O_CREAT = 0100;
    private static final int O_APPEND = 02000;
    private static final int WNOHANG = 1;
    private static final short POSIX_SPAWN_SETSID = 0x80;
    /** glibc's posix_spawn_file_actions_t is 80 bytes and posix_spawnattr_t 336: room for either. */
    private static final long SPAWN_STRUCT = 512;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle MOUNT = errnoHandle("mount", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
    private static final MethodHandle UMOUNT2 = errnoHandle("umount2", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle CLOSE = handle("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)).orElseThrow();
    private static final MethodHandle WAITPID = handle("waitpid", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT)).orElseThrow();
    private static final MethodHandle ACTIONS_INIT = handle("posix_spawn_file_actions_init",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)).orElseThrow();
    private static final MethodHandle ACTIONS_DESTROY = handle("posix_spawn_file_actions_destroy",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)).orElseThrow();
    private static final MethodHandle ADD_DUP2 = handle("posix_spawn_file_actions_adddup2",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)).orElseThrow();
    private static final MethodHandle ADD_OPEN = handle("posix_spawn_file_actions_addopen", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)).orElseThrow();
    /** glibc 2.34 and later: close every descriptor from N on in the child. */
    private static final Optional<MethodHandle> ADD_CLOSEFROM = handle("posix_spawn_file_actions_addclosefrom_np",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle ATTR_INIT = handle("posix_spawnattr_init",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)).orElseThrow();
    private static final MethodHandle ATTR_DESTROY = handle("posix_spawnattr_destroy",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS)).orElseThrow();
    private static final MethodHandle ATTR_SETFLAGS = handle("posix_spawnattr_setflags",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_SHORT)).orElseThrow();
    private static final MethodHandle SPAWN = handle("posix_spawn", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS)).orElseThrow();

    private Libc() {
    }

    private static Optional<MethodHandle> handle(String name, FunctionDescriptor descriptor) {
        return LINKER.defaultLookup().find(name).map(address -> LINKER.downcallHandle(address, descriptor));
    }

    private static MethodHandle errnoHandle(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(), descriptor,
                Linker.Option.captureCallState("errno"));
    }

    /** A failed system call: its errno. */
    static final class Failure extends Exception {
        final int errno;

        Failure(String call, int errno) {
            super(call + " failed: errno " + errno);
            this.errno = errno;
        }
    }

    /**
     * Binds {@code source} at {@code target} with {@code flags} ({@code MS_RDONLY}, {@code MS_NOEXEC}, ...;
     * a bind takes its flags only in a remount, which sets them all: the FUSE mount's nosuid and nodev
     * are kept).
     */
    static void bind(Path source, Path target, long flags) throws Failure {
        mount(source.toString(), target.toString(), MS_BIND, "bind");
        if (flags != 0) {
            try {
                mount("none", target.toString(), MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | flags, "remount of the bind with its flags");
            } catch (Failure e) {
                try {
                    unmount(target);
                } catch (Failure ignored) {
                    // reported below
                }
                throw e;
            }
        }
    }

    private static void mount(String source, String target, long flags, String what) throws Failure {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int rc = (int) MOUNT.invokeExact(state, arena.allocateFrom(source), arena.allocateFrom(target),
                    MemorySegment.NULL, flags, MemorySegment.NULL);
            if (rc != 0) {
                throw new Failure(what + " at " + target, (int) ERRNO.get(state, 0L));
            }
        } catch (Failure e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Detaches whatever is mounted at {@code target} (a lazy unmount: open files keep it until closed). */
    static void unmount(Path target) throws Failure {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            int rc = (int) UMOUNT2.invokeExact(state, arena.allocateFrom(target.toString()), MNT_DETACH);
            if (rc != 0) {
                throw new Failure("unmount of " + target, (int) ERRNO.get(state, 0L));
            }
        } catch (Failure e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * Starts {@code argv} in a session of its own with {@code env}, descriptor {@code device} as its fd 3,
     * stdin /dev/null, stdout and stderr appended to {@code log}, and no other descriptor of this process:
     * it outlives this process. Returns its pid.
     */
    static int spawn(List<String> argv, List<String> env, int device, Path log) throws Failure {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment actions = arena.allocate(SPAWN_STRUCT, 16);
            MemorySegment attributes = arena.allocate(SPAWN_STRUCT, 16);
            check("posix_spawn_file_actions_init", (int) ACTIONS_INIT.invokeExact(actions));
            check("posix_spawnattr_init", (int) ATTR_INIT.invokeExact(attributes));
            try {
                check("posix_spawnattr_setflags", (int) ATTR_SETFLAGS.invokeExact(attributes, POSIX_SPAWN_SETSID));
                check("adddup2", (int) ADD_DUP2.invokeExact(actions, device, 3));
                check("addopen", (int) ADD_OPEN.invokeExact(actions, 0, arena.allocateFrom("/dev/null"), O_RDONLY, 0));
                check("addopen", (int) ADD_OPEN.invokeExact(actions, 1, arena.allocateFrom(log.toString()),
                        O_WRONLY | O_CREAT | O_APPEND, 0600));
                check("adddup2", (int) ADD_DUP2.invokeExact(actions, 1, 2));
                if (ADD_CLOSEFROM.isPresent()) {
                    check("addclosefrom_np", (int) ADD_CLOSEFROM.get().invokeExact(actions, 4));
                }
                MemorySegment pid = arena.allocate(ValueLayout.JAVA_INT);
                check("posix_spawn " + argv.getFirst(), (int) SPAWN.invokeExact(pid, arena.allocateFrom(argv.getFirst()),
                        actions, attributes, strings(arena, argv), strings(arena, env)));
                return pid.get(ValueLayout.JAVA_INT, 0);
            } finally {
                int ignored = (int) ACTIONS_DESTROY.invokeExact(actions);
                ignored = (int) ATTR_DESTROY.invokeExact(attributes);
            }
        } catch (Failure e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Collects {@code pid} if it is a child of this process that has ended: its exit status, else -1. */
    static int reap(int pid) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(ValueLayout.JAVA_INT);
            int waited = (int) WAITPID.invokeExact(pid, status, WNOHANG);
            if (waited != pid) {
                return -1;
            }
            int s = status.get(ValueLayout.JAVA_INT, 0);
            return (s & 0x7f) == 0 ? (s >> 8) & 0xff : 128 + (s & 0x7f);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static void check(String call, int rc) throws Failure {
        if (rc != 0) {
            throw new Failure(call, rc); // the posix_spawn family returns the errno
        }
    }

    private static MemorySegment strings(Arena arena, List<String> values) {
        MemorySegment array = arena.allocate(ValueLayout.ADDRESS, values.size() + 1L);
        for (int i = 0; i < values.size(); i++) {
            array.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(values.get(i)));
        }
        array.setAtIndex(ValueLayout.ADDRESS, values.size(), MemorySegment.NULL);
        return array;
    }
}
