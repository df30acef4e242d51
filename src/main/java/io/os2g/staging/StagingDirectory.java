package io.os2g.staging;

import io.os2g.PrivateDirectory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The directory that holds one region's segment files, owned by one process at a time. An
 * {@value #OWNER_FILE} file names the owner; a directory whose owner is dead (a crashed or killed
 * mount) is emptied and taken over, so a crash never troubles the next mount.
 */
public final class StagingDirectory {

    private static final Logger LOG = LoggerFactory.getLogger(StagingDirectory.class);
    static final String OWNER_FILE = "owner.pid";

    private final Path path;

    private StagingDirectory(Path path) {
        this.path = path;
    }

    public Path path() {
        return path;
    }

    /**
     * Creates {@code path} with mode 0700, or reclaims it from a dead owner. The default parent
     * ({@link PrivateDirectory#sharedMemoryParent()}) is made private to this user or refused; another
     * parent is made if missing and must not let other users swap its entries. An existing
     * {@code path} must be this user's own directory, not a link.
     *
     * @throws StagingException when a live process owns it, another user could reach it, or it cannot be created
     */
    public static StagingDirectory claim(Path path) {
        try {
            Path parent = path.toAbsolutePath().getParent();
            if (parent != null) {
                if (parent.equals(PrivateDirectory.sharedMemoryParent())) {
                    PrivateDirectory.ensure(parent);
                } else {
                    Files.createDirectories(parent);
                    PrivateDirectory.checkParent(parent);
                }
            }
            try {
                Files.createDirectory(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            } catch (FileAlreadyExistsException e) {
                PrivateDirectory.check(path, false);
                long owner = readOwner(path);
                if (owner > 0 && owner != ProcessHandle.current().pid() && alive(owner)) {
                    throw new StagingException("staging dir " + path + " is in use by process " + owner);
                }
                LOG.info("reclaiming staging dir {} left by {}", path, owner > 0 ? "process " + owner : "an earlier mount");
                // closed first, then emptied: nothing another user put in while it was open survives
                Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rwx------"));
                deleteContents(path);
            }
            Files.writeString(path.resolve(OWNER_FILE), Long.toString(ProcessHandle.current().pid()), StandardCharsets.US_ASCII,
                    StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            return new StagingDirectory(path);
        } catch (IOException e) {
            throw new StagingException("cannot use staging dir " + path + ": " + describe(e), e);
        }
    }

    /**
     * Removes the directories in {@code parent} named {@code prefix}* whose owner is dead: regions named
     * after a process rather than a mount point, which no later mount would reclaim by name.
     */
    public static void removeDead(Path parent, String prefix) {
        try (Stream<Path> dirs = Files.list(parent)) {
            for (Path dir : dirs.filter(d -> d.getFileName().toString().startsWith(prefix) && Files.isDirectory(d)).toList()) {
                long owner = readOwner(dir);
                if (owner > 0 && owner != ProcessHandle.current().pid() && !alive(owner)) {
                    LOG.info("removing staging dir {} left by process {}", dir, owner);
                    deleteContents(dir);
                    Files.deleteIfExists(dir);
                }
            }
        } catch (IOException | UncheckedIOException e) {
            LOG.debug("staging dirs in {} left as they are: {}", parent, e.toString());
        }
    }

    /** Removes the directory and everything in it. */
    public void remove() {
        try {
            deleteContents(path);
            Files.deleteIfExists(path);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove staging dir " + path, e);
        }
    }

    /** Alive and not a zombie (killed, not yet reaped by its parent: it holds nothing any more). */
    private static boolean alive(long pid) {
        if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            return false;
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
            int afterName = stat.lastIndexOf(')');
            return afterName < 0 || afterName + 2 >= stat.length() || stat.charAt(afterName + 2) != 'Z';
        } catch (IOException e) {
            return !Files.isDirectory(Path.of("/proc")); // gone since, unless there is no /proc to ask
        }
    }

    private static long readOwner(Path dir) {
        try {
            return Long.parseLong(Files.readString(dir.resolve(OWNER_FILE), StandardCharsets.US_ASCII).trim());
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    private static void deleteContents(Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    if (!p.equals(dir)) {
                        Files.deleteIfExists(p);
                    }
                }
                return;
            } catch (NoSuchFileException e) {
                return; // already gone
            } catch (UncheckedIOException e) {
                // another owner removed its own sub-directory while this walk passed it: walk again
                if (!(e.getCause() instanceof NoSuchFileException) || attempt == 3) {
                    throw e.getCause();
                }
            }
        }
    }

    static String describe(IOException e) {
        String reason = e.getMessage();
        if (e instanceof java.nio.file.AccessDeniedException) {
            return "permission denied";
        }
        if (e instanceof java.nio.file.FileSystemException fse && fse.getReason() != null) {
            return fse.getReason();
        }
        return reason == null ? e.getClass().getSimpleName() : reason;
    }
}
