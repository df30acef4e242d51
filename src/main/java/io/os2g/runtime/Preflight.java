package io.os2g.runtime;

import io.os2g.fuse.FuseMounter;
import io.os2g.fuse.MountTable;
import io.os2g.staging.StagingConfig;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.ObjectStore;
import io.os2g.store.StoreConfig;
import io.os2g.store.StoreException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** The checks made before mounting; each failure is one line a user can act on. */
public final class Preflight {

    private Preflight() {
    }

    public static URI endpoint(String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new UsageError("--endpoint is not a URL: " + text);
        }
        if (uri.getScheme() == null || !(uri.getScheme().equals("http") || uri.getScheme().equals("https"))
                || uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new UsageError("--endpoint must be an http:// or https:// URL with a host: " + text);
        }
        if (uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/")) {
            throw new UsageError("--endpoint must not have a path (give the bucket as the first argument): " + text);
        }
        return uri;
    }

    /** Whether {@code mountPoint} (checked by {@link #mountPoint}) is {@code /dev/fd/N}: a mount another process made. */
    public static boolean preOpened(Path mountPoint) {
        return FuseMounter.preOpened(mountPoint).isPresent();
    }

    /** Whether something is mounted at {@code path} now (/proc/self/mountinfo). */
    public static boolean isMountPoint(Path path) {
        return MountTable.isMountPoint(path);
    }

    public static Path mountPoint(String text) {
        Path path = Path.of(text).toAbsolutePath().normalize();
        try {
            if (FuseMounter.preOpened(path).isPresent()) {
                return path; // a mount another process made: nothing here to check
            }
        } catch (IllegalArgumentException e) {
            throw new UsageError("mount point " + e.getMessage() + " (a /dev/fd/N mount point is a FUSE mount passed on open)");
        }
        if (!Files.exists(path)) {
            throw new UsageError("mount point does not exist: " + path);
        }
        if (!Files.isDirectory(path)) {
            throw new UsageError("mount point is not a directory: " + path);
        }
        if (MountTable.isMountPoint(path)) {
            throw new UsageError("mount point is already a mount (" + MountTable.fsTypeAt(path) + "): " + path
                    + "; unmount it first with fusermount -u " + path);
        }
        if (!Files.isReadable(path) || !Files.isExecutable(path)) {
            throw new UsageError("mount point is not accessible to this user: " + path);
        }
        return path;
    }

    /**
     * The staging dir's file system must be writable and have room for the whole region now: segment
     * files are sparse, and a page the file system cannot back would be SIGBUS at first touch.
     */
    public static void stagingFits(StagingConfig staging) {
        Path dir = staging.directory();
        Path existing = dir;
        while (existing != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (existing == null) {
            throw new UsageError("staging dir has no existing parent: " + dir);
        }
        try {
            FileStore store = Files.getFileStore(existing);
            if (store.isReadOnly()) {
                throw new UsageError("staging dir " + dir + " is on a read-only file system (" + store + "); give --staging-dir on a writable one");
            }
            long reclaimable = Files.isDirectory(dir) ? sizeOf(dir) : 0;
            long free = store.getUsableSpace() + reclaimable;
            if (free < staging.capacity()) {
                throw new UsageError("staging dir " + dir + " has " + Sizes.approximate(free) + " free on its file system ("
                        + store + "), below --staging-size " + Sizes.format(staging.capacity())
                        + "; give a smaller --staging-size, or more room (docker run --shm-size for /dev/shm)");
            }
        } catch (IOException e) {
            throw new UsageError("cannot inspect the file system of staging dir " + dir + ": " + e.getMessage());
        }
    }

    /** Bytes held by a crashed mount's segment files, which claiming the dir frees. */
    private static long sizeOf(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            long total = 0;
            for (Path f : (Iterable<Path>) files::iterator) {
                if (Files.isRegularFile(f)) {
                    total += Files.size(f);
                }
            }
            return total;
        }
    }

    public static void fuseAvailable() {
        if (!Files.exists(Path.of("/dev/fuse"))) {
            throw new UsageError("/dev/fuse is missing: load the module (modprobe fuse), or give a container --device /dev/fuse --cap-add SYS_ADMIN");
        }
        if (!onPath("fusermount3") && !onPath("fusermount")) {
            throw new UsageError("fusermount is not installed: apt-get install fuse3 (Debian/Ubuntu) or dnf install fuse3 (Fedora/RHEL)");
        }
    }

    /** Whether {@code command} is on PATH; without a PATH (mount(8) runs its helpers with none), the usual directories. */
    private static boolean onPath(String command) {
        String path = System.getenv("PATH");
        if (path == null || path.isEmpty()) {
            path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        }
        for (String dir : path.split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, command))) {
                return true;
            }
        }
        return false;
    }

    /**
     * A client of the store {@code config} names, its credentials fetched; what the user can fix (no
     * credentials in any source, an unusable CA bundle) is one line.
     */
    public static MinioObjectStore openStore(StoreConfig config) {
        try {
            return new MinioObjectStore(config);
        } catch (StoreException e) {
            throw new UsageError(e.kind() == StoreException.Kind.BAD_CREDENTIALS
                    ? e.getMessage() + "; give credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, --profile, a role), "
                      + "or --no-sign-request for a public bucket"
                    : e.getMessage());
        }
    }

    /** Lists one key so that a bad endpoint, credential or bucket is reported now, not as EIO later. */
    public static void storeAnswers(ObjectStore store, URI endpoint, String prefix) {
        try {
            store.probe(prefix);
        } catch (IllegalArgumentException e) {
            // the client's own checks, e.g. of the bucket name, before anything is sent
            throw new UsageError(e.getMessage());
        } catch (StoreException e) {
            String bucket = store.bucket();
            throw new UsageError(switch (e.kind()) {
                case UNREACHABLE -> "cannot reach the endpoint " + endpoint + ": " + rootCause(e);
                case UNTRUSTED -> rootCause(e) + "; give its CA with --ca-bundle FILE (or AWS_CA_BUNDLE), or --insecure-skip-verify for a test setup";
                case UNAVAILABLE -> "the endpoint " + endpoint + " did not answer in time: " + rootCause(e);
                case BAD_CREDENTIALS -> "credentials rejected by " + endpoint + " (" + rootCause(e)
                        + "); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, --profile or --credentials-file";
                case EXPIRED_CREDENTIALS -> "credentials refused as expired by " + endpoint + " (" + rootCause(e)
                        + ") and their source gave no newer ones";
                case ACCESS_DENIED -> "access denied listing bucket " + bucket + " at " + endpoint;
                case NO_SUCH_BUCKET -> "bucket " + bucket + " does not exist at " + endpoint;
                case WRONG_REGION -> "bucket " + bucket + " is in region " + e.region() + ", not the region given ("
                        + "--region or AWS_REGION); give --region " + e.region() + ", or neither to have it found";
                case NOT_FOUND, CHANGED, PROTOCOL -> "unexpected answer from " + endpoint + ": " + e.getMessage();
            });
        }
    }

    private static String rootCause(StoreException e) {
        String m = e.getMessage();
        int cut = m.indexOf(": bucket=");
        return cut > 0 ? m.substring(0, cut) : m;
    }

    /** The disk cache asked for, opened; null for none. A directory that cannot be one is the user's to fix. */
    static io.os2g.diskcache.DiskCache openCache(io.os2g.diskcache.CacheConfig cache) {
        if (cache == null) {
            return null;
        }
        try {
            return io.os2g.diskcache.DiskCache.open(cache.directory(), cache.maxBytes(), cache.minFreePercent());
        } catch (io.os2g.diskcache.DiskCache.CacheDirectoryException e) {
            throw new UsageError(e.getMessage());
        }
    }
}
