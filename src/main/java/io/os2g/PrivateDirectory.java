package io.os2g;

import java.io.IOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

/**
 * Directories that only this process's user can reach, made and checked without following links: where
 * os2g keeps staging segments, the agent's hand-off sockets, the disk cache and daemon logs. Another
 * local user who creates the path first (a directory of theirs, or a link to someone else's) makes the
 * caller refuse it, never adopt it.
 */
public final class PrivateDirectory {

    private static final int STICKY = 01000;
    private static final MethodHandle GETEUID = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("geteuid").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_INT));

    private PrivateDirectory() {
    }

    /** This process's effective uid: the owner of what it creates. */
    public static int effectiveUid() {
        try {
            return (int) GETEUID.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException("geteuid failed", t);
        }
    }

    /** {@code /dev/shm/os2g-UID}: the default parent of this user's staging regions (memory, and any of its processes can map them). */
    public static Path sharedMemoryParent() {
        return Path.of("/dev/shm", "os2g-" + effectiveUid());
    }

    /**
     * Creates {@code dir} with mode 0700 (its parent must exist), or accepts an existing one only if it is
     * a directory (not a link), owned by this user and closed to everyone else.
     *
     * @throws IOException naming what is wrong, for a refusal
     */
    public static Path ensure(Path dir) throws IOException {
        try {
            Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
            // made by someone before: checked below as it is, link and all
        }
        check(dir, true);
        return dir;
    }

    /**
     * Checks that {@code dir} is a directory (not a link) owned by this user; with {@code closed}, also
     * that group and others have no access.
     */
    public static void check(Path dir, boolean closed) throws IOException {
        Map<String, Object> attributes;
        try {
            attributes = Files.readAttributes(dir, "unix:uid,mode,isDirectory,isSymbolicLink", LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            throw new IOException(dir + " does not exist", e);
        }
        if ((Boolean) attributes.get("isSymbolicLink")) {
            throw new IOException(dir + " is a symbolic link: refusing to follow it");
        }
        if (!(Boolean) attributes.get("isDirectory")) {
            throw new IOException(dir + " is not a directory");
        }
        int owner = (Integer) attributes.get("uid");
        if (owner != effectiveUid()) {
            throw new IOException(dir + " is owned by uid " + owner + ", not by this user (uid " + effectiveUid() + "): refusing it");
        }
        int mode = (Integer) attributes.get("mode") & 07777;
        if (closed && (mode & 077) != 0) {
            throw new IOException(dir + " is open to other users (mode " + String.format("%04o", mode) + "): it must be 0700");
        }
    }

    /**
     * Checks that no other user can swap entries of {@code dir}: owned by this user or root, and writable
     * by others only with the sticky bit (as {@code /tmp} and {@code /dev/shm} are). Links on the way to
     * it are followed: only what they lead to is named by what os2g makes.
     */
    public static void checkParent(Path dir) throws IOException {
        Map<String, Object> attributes = Files.readAttributes(dir.toRealPath(), "unix:uid,mode");
        int owner = (Integer) attributes.get("uid");
        int mode = (Integer) attributes.get("mode");
        if (owner != 0 && owner != effectiveUid()) {
            throw new IOException(dir + " belongs to uid " + owner + ", who could replace what os2g makes in it: refusing it");
        }
        if ((mode & 022) != 0 && (mode & STICKY) == 0) {
            throw new IOException(dir + " is writable by other users without the sticky bit (mode "
                    + String.format("%04o", mode & 07777) + "): refusing it");
        }
    }
}
