package io.os2g.csi;

import io.grpc.Status;
import io.os2g.fuse.FuseMounter;
import io.os2g.fuse.MountTable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The volumes published on this node. Each (volume, attributes, credentials) is served by one {@code os2g
 * mount} process, which the plugin mounts for (mount(2), then the descriptor as {@code /dev/fd/3}) in its
 * state dir and starts in a session of its own, so it outlives the plugin; each pod's target is a bind of
 * that mount, read-only unless the volume allows writes. The last unpublish ends the mount. What this
 * knows lives in the state dir and the kernel's mount table: a mount is recorded before anything of it is
 * made, so a restarted plugin finds every mount, keeps those a pod's target binds, and ends the rest (a
 * publish cut short by a crash) with their processes.
 */
public final class NodeVolumes {

    private static final Logger LOG = LoggerFactory.getLogger(NodeVolumes.class);
    /** How long a mount process may take to answer (its checks include one request to the store). */
    static final Duration MOUNT_TIMEOUT = Duration.ofSeconds(90);
    private static final Duration EXIT_TIMEOUT = Duration.ofSeconds(10);

    private final Path stateDir;
    private final Path secretsDir;
    private final Path stagingParent;
    private final List<String> mountCommand;
    private final MountArguments arguments;
    private final MountStarter starter;
    /** The mount options that name the node agent every mount then uses (it holds the credentials); empty for none. */
    private final List<String> agent;
    private final Map<String, SharedMount> mounts = new HashMap<>();

    /**
     * @param stateDir where the mounts are made and recorded (on the host, with mount propagation to the kubelet)
     * @param secretsDir where credentials files are written (a memory file system)
     * @param stagingParent where each mount's staging dir is made
     * @param mountCommand the words that run {@code os2g mount} (the plugin's own build)
     * @param starter who starts the mount processes (here, or the mounter)
     * @param agent the options that name the node agent ({@code --agent ADDRESS}, and the link's TLS files for a
     *     {@code tcp://} one), through which every mount then reads; empty for none
     */
    public NodeVolumes(Path stateDir, Path secretsDir, Path stagingParent, List<String> mountCommand, MountArguments arguments,
                       MountStarter starter, List<String> agent) {
        this.stateDir = stateDir;
        this.secretsDir = secretsDir;
        this.stagingParent = stagingParent;
        this.mountCommand = List.copyOf(mountCommand);
        this.arguments = arguments;
        this.starter = starter;
        this.agent = List.copyOf(agent);
        recover();
    }

    /**
     * Picks up the mounts a previous plugin made that a pod's target binds; ends the others (a publish
     * that a crash cut short, whose pod may be gone: no retry would ever come for them) and forgets the
     * ones no longer mounted.
     */
    private void recover() {
        if (!Files.isDirectory(stateDir)) {
            return;
        }
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(stateDir, Files::isDirectory)) {
            for (Path dir : dirs) {
                SharedMount m = SharedMount.load(dir);
                if (m == null) {
                    if (!MountTable.isMountPoint(dir.resolve("mnt"))) {
                        deleteTree(dir); // made by a publish that ended before it recorded anything
                    }
                    continue;
                }
                if (!MountTable.isMountPoint(m.mountPoint())) {
                    LOG.info("the mount of volume {} at {} is gone: forgetting it", m.volumeId(), m.mountPoint());
                    stop(m);
                } else if (targets(m).isEmpty()) {
                    LOG.info("the mount of volume {} at {} (pid {}) has no pod's target (its publish did not finish): ending it",
                            m.volumeId(), m.mountPoint(), m.pid());
                    stop(m);
                } else {
                    mounts.put(m.key(), m);
                    LOG.info("found the mount of volume {} at {} (pid {}{})", m.volumeId(), m.mountPoint(), m.pid(),
                            serving(m) ? "" : ", no longer serving");
                }
            }
        } catch (IOException e) {
            LOG.warn("cannot read the state dir {}: {}", stateDir, e.toString());
        }
    }

    /** Publishes {@code request.volumeId()} at {@code request.target()}: idempotent, as NodePublishVolume must be. */
    public synchronized void publish(VolumeRequest request) throws CsiException {
        request.checkSecrets();
        if (!agent.isEmpty() && (!request.secrets().isEmpty() || request.webIdentity())) {
            throw CsiException.invalid("this node's volumes are read through the node agent, which signs with its own credentials: "
                    + "the volume's " + (request.webIdentity() ? VolumeRequest.ROLE_ARN : "nodePublishSecretRef") + " has no use here");
        }
        String token = null;
        if (request.webIdentity()) {
            if (!request.secrets().isEmpty()) {
                throw CsiException.invalid("a volume signs with a secret or with " + VolumeRequest.ROLE_ARN + ", not both");
            }
            if (!request.attributes().containsKey("region")) {
                throw CsiException.invalid(VolumeRequest.ROLE_ARN + " needs the region attribute (STS's and the bucket's)");
            }
            token = request.token();
        }
        List<String> words = arguments.of(request.mountAttributes(), request.flags().options());
        boolean writable = request.allowsWrites();
        boolean readOnly = (request.bindFlags() & Libc.MS_RDONLY) != 0;
        String key = request.mountKey();
        MountTable.Entry at = MountTable.entryAt(request.target());
        if (at != null) {
            SharedMount serving = byDevice(at.device());
            if (serving != null && serving.key().equals(key) && at.readOnly() == readOnly) {
                if (token != null) {
                    writeToken(key, token); // the kubelet republishes with a fresh token
                }
                return; // published already
            }
            throw new CsiException(Status.Code.ALREADY_EXISTS, "target " + request.target() + " has "
                    + (serving != null && serving.key().equals(key) ? "this volume mounted " + (at.readOnly() ? "read-only" : "writable")
                    : "another volume mounted") + ": unpublish it first");
        }
        SharedMount shared = mounts.get(key);
        if (shared != null && !serving(shared)) {
            LOG.warn("the mount process of volume {} (pid {}) has ended: mounting again", shared.volumeId(), shared.pid());
            stop(shared);
            shared = null;
        }
        boolean started = shared == null;
        if (started) {
            shared = start(request, words, writable, token);
        } else if (token != null) {
            writeToken(key, token);
        }
        try {
            Files.createDirectories(request.target());
            Libc.bind(shared.mountPoint(), request.target(), request.bindFlags());
        } catch (IOException | Libc.Failure e) {
            if (started) {
                stop(shared);
            }
            throw new CsiException(Status.Code.INTERNAL, "cannot bind volume " + request.volumeId() + " at " + request.target() + ": " + e.getMessage(), e);
        }
        LOG.info("published {} ({} mount {})", request, started ? "new" : "shared", shared.mountPoint());
    }

    /**
     * Unpublishes volume {@code volumeId} from {@code target}; ends the shared mount after its last target.
     * Idempotent; NOT_FOUND, touching nothing, where another volume is published at {@code target}.
     */
    public synchronized void unpublish(String volumeId, Path target) throws CsiException {
        MountTable.Entry at = MountTable.entryAt(target);
        SharedMount shared = at == null ? null : byDevice(at.device());
        if (shared != null && !shared.volumeId().equals(volumeId)) {
            throw new CsiException(Status.Code.NOT_FOUND, "volume " + volumeId + " is not published at " + target
                    + " (volume " + shared.volumeId() + " is): nothing unpublished");
        }
        while (MountTable.isMountPoint(target)) { // a target bound twice over (a retried call) comes off whole
            try {
                Libc.unmount(target);
            } catch (Libc.Failure e) {
                throw new CsiException(Status.Code.INTERNAL, "cannot unmount " + target + ": " + e.getMessage(), e);
            }
        }
        try {
            Files.deleteIfExists(target); // the spec's: the plugin removes the target it was given
        } catch (IOException e) {
            LOG.debug("target {} left in place: {}", target, e.toString());
        }
        if (shared != null && targets(shared).isEmpty()) {
            LOG.info("last target of volume {} unpublished: ending its mount (pid {})", shared.volumeId(), shared.pid());
            stop(shared);
        }
        LOG.info("unpublished volume {} from {}", volumeId, target);
    }

    /**
     * Usage of volume {@code volumeId} published at {@code path}, and whether its mount is healthy. A
     * read-only target has no room a pod could fill: it reports 0 total, 0 available (never "full").
     *
     * @throws CsiException NOT_FOUND where that volume is not published at {@code path}
     */
    public synchronized VolumeStats stats(String volumeId, Path path) throws CsiException {
        MountTable.Entry at = MountTable.entryAt(path);
        if (at == null || !at.fsType().equals(FuseMounter.TYPE)) {
            throw new CsiException(Status.Code.NOT_FOUND, "volume " + volumeId + " is not published at " + path);
        }
        SharedMount shared = byDevice(at.device());
        if (shared != null && (!shared.volumeId().equals(volumeId) || at.mountPoint().equals(shared.mountPoint()))) {
            throw new CsiException(Status.Code.NOT_FOUND, "volume " + volumeId + " is not published at " + path);
        }
        if (shared == null || !serving(shared)) {
            return VolumeStats.abnormal("the os2g mount process of this volume has ended: restart the pod to mount it again");
        }
        try {
            FileStore store = Files.getFileStore(path);
            return at.readOnly() ? new VolumeStats(0, 0, null) : new VolumeStats(store.getTotalSpace(), store.getUsableSpace(), null);
        } catch (IOException e) {
            return VolumeStats.abnormal("the mount does not answer: " + e.getMessage());
        }
    }

    /** What NodeGetVolumeStats reports: bytes, or the reason the volume is not usable ({@code problem} non-null). */
    public record VolumeStats(long total, long available, String problem) {
        static VolumeStats abnormal(String problem) {
            return new VolumeStats(0, 0, problem);
        }
    }

    private SharedMount byDevice(String device) {
        for (SharedMount m : mounts.values()) {
            if (m.device().equals(device)) {
                return m;
            }
        }
        return null;
    }

    /** The pods' binds of {@code shared}: every mount of its file system but its own mount point. */
    private static List<Path> targets(SharedMount shared) {
        List<Path> targets = new ArrayList<>();
        for (MountTable.Entry e : MountTable.entries()) {
            if (e.device().equals(shared.device()) && !e.mountPoint().equals(shared.mountPoint())) {
                targets.add(e.mountPoint());
            }
        }
        return targets;
    }

    /** Whether the mount process still runs and its mount answers (a mount whose process died answers ENOTCONN). */
    private boolean serving(SharedMount m) {
        if (starter.ended(m.pid(), log(m))) {
            return false;
        }
        try {
            Files.getFileStore(m.mountPoint());
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static Path log(SharedMount m) {
        return m.stateDir().resolve("mount.log");
    }

    private SharedMount start(VolumeRequest request, List<String> words, boolean writable, String token) throws CsiException {
        String key = request.mountKey();
        Path dir = stateDir.resolve(key);
        Path mountPoint = dir.resolve("mnt");
        Path log = dir.resolve("mount.log");
        Path staging = stagingParent.resolve("csi-" + key);
        Path credentials = null;
        int device = -1;
        long pid = -1;
        try {
            Files.createDirectories(mountPoint);
            if (MountTable.isMountPoint(mountPoint)) {
                Libc.unmount(mountPoint); // left by a mount process that ended
            }
            // recorded before anything is made: a crash from here on leaves what a restarted plugin ends
            new SharedMount(key, request.volumeId(), mountPoint, -1, "", writable, staging, null).save();
            Files.deleteIfExists(log);
            Files.deleteIfExists(MountStarter.exitFile(log));
            List<String> env = environment();
            if (!request.secrets().isEmpty()) {
                credentials = writeCredentials(key, request.credentialsFile());
            } else if (token != null) {
                credentials = writeToken(key, token);
                env.addAll(List.of("AWS_WEB_IDENTITY_TOKEN_FILE=" + credentials, "AWS_ROLE_ARN=" + request.attributes().get(VolumeRequest.ROLE_ARN),
                        "AWS_ROLE_SESSION_NAME=os2g-" + request.serviceAccount().replaceAll("[^A-Za-z0-9_=,.@-]", "-"),
                        "AWS_REGION=" + request.attributes().get("region")));
                String sts = request.attributes().get(VolumeRequest.STS_ENDPOINT);
                if (sts != null) {
                    env.add("AWS_ENDPOINT_URL_STS=" + sts);
                }
            }
            device = FuseMounter.mountForAnother(mountPoint, "os2g:" + words.getFirst(), !writable);
            List<String> argv = new ArrayList<>(mountCommand);
            argv.add(words.getFirst());
            argv.add("/dev/fd/3");
            argv.addAll(words.subList(1, words.size()));
            argv.addAll(List.of("--staging-dir", staging.toString()));
            if (!agent.isEmpty()) {
                argv.addAll(agent);
            } else if (!request.secrets().isEmpty()) {
                argv.addAll(List.of("--credentials-file", credentials.toString()));
            } else if (token == null) {
                argv.add("--no-sign-request");
            }
            pid = starter.start(argv, env, device, log);
            new SharedMount(key, request.volumeId(), mountPoint, pid, "", writable, staging, credentials).save();
            Libc.close(device);
            device = -1;
            awaitMounted(pid, log, request.volumeId());
            MountTable.Entry entry = MountTable.entryAt(mountPoint);
            if (entry == null) {
                throw new CsiException(Status.Code.INTERNAL, "the mount of volume " + request.volumeId() + " vanished as it started");
            }
            SharedMount shared = new SharedMount(key, request.volumeId(), mountPoint, pid, entry.device(), writable, staging, credentials);
            shared.save();
            mounts.put(key, shared);
            return shared;
        } catch (CsiException | IOException | Libc.Failure | RuntimeException e) {
            LOG.warn("mount of volume {} failed: {}", request.volumeId(), e.getMessage());
            if (device >= 0) {
                Libc.close(device);
            }
            SharedMount halfMade = new SharedMount(key, request.volumeId(), mountPoint, pid, "", writable, staging, credentials);
            stop(halfMade);
            if (e instanceof CsiException c) {
                throw c;
            }
            throw new CsiException(Status.Code.INTERNAL, "cannot mount volume " + request.volumeId() + ": " + e.getMessage(), e);
        }
    }

    /** The plugin's environment without credentials: a mount signs with its volume's secret or not at all. */
    private static List<String> environment() {
        List<String> env = new ArrayList<>();
        System.getenv().forEach((k, v) -> {
            if (!k.startsWith("AWS_")) {
                env.add(k + "=" + v);
            }
        });
        env.add("AWS_EC2_METADATA_DISABLED=true"); // never the node's instance role
        return env;
    }

    private Path writeCredentials(String key, String contents) throws IOException {
        return writeSecret(key, "credentials", contents);
    }

    /** The pod's service-account token where the mount's STS exchange reads it (again, as it rotates). */
    private Path writeToken(String key, String token) throws CsiException {
        try {
            return writeSecret(key, "token", token);
        } catch (IOException e) {
            throw new CsiException(Status.Code.INTERNAL, "cannot write the service-account token: " + e.getMessage(), e);
        }
    }

    /** A 0600 file in the volume's own 0700 directory of the secrets dir, replaced whole (a reader never sees half). */
    private Path writeSecret(String key, String name, String contents) throws IOException {
        Path dir = secretsDir.resolve(key);
        Files.createDirectories(secretsDir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path file = dir.resolve(name);
        Path temporary = dir.resolve(name + ".new");
        Files.deleteIfExists(temporary);
        Files.createFile(temporary, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(temporary, contents, StandardCharsets.UTF_8);
        Files.move(temporary, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        return file;
    }

    /** Waits for the mount process's "mounted" line, its exit (its one-line reason is the error) or the timeout. */
    private void awaitMounted(long pid, Path log, String volumeId) throws CsiException {
        long deadline = System.nanoTime() + MOUNT_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            String text = read(log);
            if (text.contains(" mounted ")) {
                return;
            }
            if (starter.ended(pid, log)) {
                int status = MountStarter.exitStatus(log);
                String reason = lastLine(read(log));
                throw new CsiException(status == 2 ? Status.Code.INVALID_ARGUMENT : Status.Code.INTERNAL,
                        "os2g mount of volume " + volumeId + " failed (exit status " + status + "): " + reason);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CsiException(Status.Code.ABORTED, "interrupted while volume " + volumeId + " was mounting");
            }
        }
        throw new CsiException(Status.Code.DEADLINE_EXCEEDED, "os2g mount of volume " + volumeId + " did not answer within "
                + MOUNT_TIMEOUT.toSeconds() + " s: " + lastLine(read(log)));
    }

    private static String read(Path log) {
        try {
            return Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    private static String lastLine(String text) {
        List<String> lines = text.lines().filter(l -> !l.isBlank() && !l.contains("building")).toList();
        return lines.isEmpty() ? "(no output)" : lines.getLast().strip();
    }

    /**
     * Ends a mount: unmounts it (its process sees the session end and exits), then removes its files and,
     * once its process has ended, its staging dir (a process killed outright leaves it behind).
     */
    private void stop(SharedMount m) {
        try {
            if (MountTable.isMountPoint(m.mountPoint())) {
                Libc.unmount(m.mountPoint());
            }
        } catch (Libc.Failure e) {
            LOG.warn("cannot unmount {}: {}", m.mountPoint(), e.getMessage());
        }
        boolean ended = m.pid() <= 0 || starter.ended(m.pid(), log(m));
        if (!ended) {
            long deadline = System.nanoTime() + EXIT_TIMEOUT.toNanos();
            while (!(ended = starter.ended(m.pid(), log(m))) && System.nanoTime() < deadline) {
                sleep(20);
            }
            if (!ended) {
                // its session is gone, so it ends by itself; here is only where it can be told to hurry
                LOG.warn("mount process {} still runs {} s after its unmount; its last line: {}", m.pid(), EXIT_TIMEOUT.toSeconds(),
                        lastLine(read(log(m))));
                if (starter instanceof LocalStarter) {
                    ProcessHandle.of(m.pid()).ifPresent(ProcessHandle::destroy);
                }
            }
        }
        if (ended) {
            deleteTree(m.stagingDir());
        }
        remove(m);
    }

    /** Forgets a mount: its record, log and mount point, and its credentials. */
    private void remove(SharedMount m) {
        mounts.remove(m.key(), m);
        deleteTree(secretsDir.resolve(m.key()));
        if (!MountTable.isMountPoint(m.mountPoint())) {
            deleteTree(m.stateDir());
        }
    }

    private static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | java.io.UncheckedIOException e) {
            LOG.warn("cannot remove {}: {}", dir, e.toString());
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
