package io.os2g.cli;

import io.os2g.PrivateDirectory;
import io.os2g.agent.AgentConfig;
import io.os2g.host.FsConfig;
import io.os2g.host.FuseMount;
import io.os2g.host.WritePolicy;
import io.os2g.runtime.Gateway;
import io.os2g.runtime.MountConfig;
import io.os2g.runtime.Preflight;
import io.os2g.runtime.Sizes;
import io.os2g.runtime.StagingSizeAuto;
import io.os2g.runtime.UsageError;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingDirectory;
import io.os2g.store.StoreConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "mount", sortOptions = false, usageHelpAutoWidth = true,
        description = {"Mount a bucket (or a prefix of it) at MOUNTPOINT, read-only unless --allow-writes.",
                "Stays in the foreground until unmounted (fusermount -u MOUNTPOINT, Ctrl-C or SIGTERM).",
                "Credentials: the environment, web identity, AWS profiles, container or instance roles (renewed before they expire),",
                "or --profile, --credentials-file, --no-sign-request."})
final class MountCommand implements Callable<Integer> {

    private static final Logger LOG = LoggerFactory.getLogger(MountCommand.class);
    /** "forever" as a kernel attribute timeout: a year. */
    private static final long FOREVER_SECONDS = 365L * 24 * 3600;

    @Parameters(index = "0", paramLabel = "BUCKET[/PREFIX]", description = "Bucket, optionally with a prefix to mount as the root.")
    String source;

    @Parameters(index = "1", paramLabel = "MOUNTPOINT", description = {"An existing empty directory; or /dev/fd/N, a FUSE mount another process made",
            "(mount(2) with fd=N) and passed on open: served here, unmounted by that process."})
    String mountPoint;

    @Mixin
    StoreOptions store = new StoreOptions();

    @Option(names = "--agent", paramLabel = "unix:PATH",
            description = "Use the agent process listening at PATH (os2g agent) instead of one in this process: this process then holds no credentials and opens no connection to the store.")
    String agent;

    @Option(names = "--agent-replies", paramLabel = "on|off", defaultValue = "on",
            description = {"With --agent: lend the agent this mount's /dev/fuse so that it replies to READs itself, where it shares this kernel",
                    "(the shim then moves no file bytes); off: the shim replies to every READ from the staging region, as it does for an agent",
                    "on a DPU, which cannot take the descriptor (default: ${DEFAULT-VALUE})."})
    String agentReplies;

    @Option(names = "-o", paramLabel = "OPTION[,OPTION...]", split = ",",
            description = {"Options as in /etc/fstab: any long option of this command with _ for -, e.g. endpoint=URL,metadata_ttl=forever,staging_size=8G;",
                    "mount(8)'s own (_netdev, nofail, x-systemd.*) are ignored; the rest are FUSE options, e.g. allow_other (lets other users read the mount;",
                    "off by default because the mount then serves the bucket with the credentials of whoever mounted it)."})
    List<String> fuseOptions = new ArrayList<>();

    @Option(names = "--uid", paramLabel = "UID", description = "Owner of files and directories (default: the caller).")
    Integer uid;

    @Option(names = "--gid", paramLabel = "GID", description = "Group of files and directories (default: the caller's).")
    Integer gid;

    @Option(names = "--file-mode", paramLabel = "MODE", description = "Permission bits of files (default: 0444, 0644 with --allow-writes).")
    String fileMode;

    @Option(names = "--dir-mode", paramLabel = "MODE", description = "Permission bits of directories (default: 0555, 0755 with --allow-writes).")
    String dirMode;

    /** Half of it holds parts waiting for their upload: room for two parts of 8 MiB (S3's parts are at least 5 MiB). */
    private static final long MIN_WRITE_STAGING = 32L << 20;

    @Option(names = "--allow-writes",
            description = "Let new files be written (in order, published whole at close) and directories made; see docs/WRITES.md.")
    boolean allowWrites;

    @Option(names = "--allow-overwrite", description = "With --allow-writes: let an open with O_TRUNC, or a rename, replace an existing key.")
    boolean allowOverwrite;

    @Option(names = "--allow-delete", description = "With --allow-writes: let unlink delete keys, and rename move keys this mount did not write.")
    boolean allowDelete;

    @Option(names = "--metadata-ttl", paramLabel = "SECONDS|forever", defaultValue = "300",
            description = "How long listings and attributes are trusted (default: ${DEFAULT-VALUE}); forever for datasets that do not change.")
    String metadataTtl;

    @Option(names = "--staging-dir", paramLabel = "DIR", description = "Where staging segments live (default: /dev/shm/os2g-<uid>/<mount-id>, private to the user).")
    Path stagingDir;

    @Option(names = "--staging-size", paramLabel = "SIZE|auto", defaultValue = "1G",
            description = "Bound on staged and in-flight data; auto: a quarter of the container's memory limit or of the memory available, "
                    + "the smaller, between 64M and 16G (default: ${DEFAULT-VALUE}).")
    String stagingSize;

    @Option(names = "--chunk-size", paramLabel = "SIZE", defaultValue = "8M", description = "Unit of fetching, a power of two >= 64K (default: ${DEFAULT-VALUE}).")
    String chunkSize;

    @Option(names = "--max-readahead", paramLabel = "SIZE", defaultValue = "256M",
            description = "Readahead cap per open file, within a quarter of the staging region; the window is sized from the reader's rate below it (default: ${DEFAULT-VALUE}).")
    String maxReadahead;

    @Option(names = "--dir-prefetch", paramLabel = "N", defaultValue = "256",
            description = "Small files of a directory being read through to stage ahead of their open (with --cache-dir the directory is also filled into the disk cache); 0 turns both off (default: ${DEFAULT-VALUE}).")
    int dirPrefetch;

    @Option(names = "--expand-tar",
            description = "Show each object NAME.tar also as a directory NAME.tar.d/ of its members (regular files and directories).")
    boolean expandTar;

    @Option(names = "--decompress",
            description = "Show each object NAME.gz or NAME.zst also as NAME, decompressed (exact size in stat; best read sequentially).")
    boolean decompress;

    @Option(names = "--gpu", paramLabel = "DEVICE",
            description = "Register the staging region with CUDA device DEVICE (page-locked, GPU-visible); with --agent, the agent does.")
    Integer gpu;

    @Option(names = "--fsname", paramLabel = "NAME", description = "Source name shown in /proc/mounts and df (default: os2g:BUCKET[/PREFIX]).")
    String fsname;

    @Option(names = "--daemon", description = "Detach once the mount answers.")
    boolean daemon;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Mixin
    CacheOptions cache = new CacheOptions();

    @Override
    public Integer call() throws Exception {
        service.configureLogging();
        MountConfig config = config();
        if (daemon) {
            return Daemon.detach(config.mountPoint());
        }
        Gateway gateway = Gateway.open(config);
        // SIGINT/SIGTERM: unmount and clean up, then exit 0 (a clean unmount is success, not "killed by signal")
        Thread hook = new Thread(() -> {
            int status = 0;
            try {
                gateway.close();
            } catch (RuntimeException e) {
                System.err.println("os2g: unclean shutdown: " + e);
                status = 1;
            } finally {
                Runtime.getRuntime().halt(status);
            }
        }, "os2g-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        gateway.awaitUnmount();
        gateway.close();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running or has run
        }
        return 0;
    }

    /** A mount command from its command-line words, defaults filled in as for {@code os2g mount}. */
    static MountCommand parse(String... args) {
        MountCommand command = new MountCommand();
        new picocli.CommandLine(command).parseArgs(args);
        return command;
    }

    MountConfig config() {
        int slash = source.indexOf('/');
        String bucket = slash < 0 ? source : source.substring(0, slash);
        String prefix = slash < 0 ? "" : source.substring(slash + 1);
        if (bucket.isEmpty()) {
            throw new UsageError("no bucket name in " + source);
        }
        if (!prefix.isEmpty() && !prefix.endsWith("/")) {
            prefix = prefix + "/";
        }
        // with --agent, the agent resolves credentials and talks to the store; this process never does
        StoreConfig storeConfig = agent == null ? store.config(bucket) : null;
        Duration readDeadline = store.readDeadline();

        Path mount = Preflight.mountPoint(mountPoint);
        long chunk = Sizes.parse("--chunk-size", chunkSize);
        if (Long.bitCount(chunk) != 1 || chunk < StagingConfig.DEFAULT_PAGE_SIZE || chunk > (1L << 30)) {
            throw new UsageError("--chunk-size must be a power of two between 64K and 1G: " + chunkSize);
        }
        long staging = stagingSize.equalsIgnoreCase("auto") ? StagingSizeAuto.of(chunk) : Sizes.parse("--staging-size", stagingSize);
        if (staging < chunk) {
            throw new UsageError("--staging-size (" + stagingSize + ") is below one chunk (--chunk-size " + chunkSize + ")");
        }
        long readahead = Sizes.parse("--max-readahead", maxReadahead);
        io.os2g.diskcache.CacheConfig cacheConfig = cache.config();
        if (cacheConfig != null && agent != null) {
            throw new UsageError("the disk cache is the agent's: give --cache-dir to os2g agent, not to a mount with --agent");
        }
        if (gpu != null && gpu < 0) {
            throw new UsageError("--gpu must be a CUDA device number (0, 1, ...): " + gpu);
        }
        boolean replies = switch (agentReplies) {
            case "on" -> true;
            case "off" -> false;
            default -> throw new UsageError("--agent-replies must be on or off: " + agentReplies);
        };
        if (dirPrefetch < 0) {
            throw new UsageError("--dir-prefetch must not be negative: " + dirPrefetch);
        }
        AgentConfig agentConfig = new AgentConfig(chunk, Math.min(AgentConfig.DEFAULT_INITIAL_READAHEAD, readahead), readahead,
                store.maxFetches, dirPrefetch);

        Duration ttl = parseTtl(metadataTtl);
        boolean preOpened = Preflight.preOpened(mount);
        if (preOpened && daemon) {
            throw new UsageError("--daemon cannot pass on a /dev/fd mount point: the process that mounted it runs this one");
        }
        Path dir = stagingDir != null ? stagingDir.toAbsolutePath().normalize()
                : preOpened ? preOpenedStagingDir() : PrivateDirectory.sharedMemoryParent().resolve(mountId(mount));
        StagingConfig stagingConfig = StagingConfig.of(dir, staging, readDeadline);

        if ((allowOverwrite || allowDelete) && !allowWrites) {
            throw new UsageError((allowOverwrite ? "--allow-overwrite" : "--allow-delete") + " needs --allow-writes");
        }
        if (allowWrites && staging < MIN_WRITE_STAGING) {
            throw new UsageError("--allow-writes needs --staging-size of at least " + Sizes.format(MIN_WRITE_STAGING)
                    + " (written files are uploaded from it in parts of 8M): " + stagingSize);
        }
        FsConfig fs = new FsConfig(id("--uid", uid, CallerIds.uid()), id("--gid", gid, CallerIds.gid()),
                parseMode("--file-mode", fileMode != null ? fileMode : allowWrites ? "0644" : "0444"),
                parseMode("--dir-mode", dirMode != null ? dirMode : allowWrites ? "0755" : "0555"), System.currentTimeMillis(), readDeadline,
                mount.toAbsolutePath().normalize().toString(), new WritePolicy(allowWrites, allowOverwrite, allowDelete));

        long ttlSeconds = ttl == null ? FOREVER_SECONDS : ttl.toSeconds();
        List<String> options = new ArrayList<>();
        // not "ro": the kernel would refuse writes to /.os2g/prefetch; a read-only mount answers EROFS itself
        options.add("fsname=" + (fsname != null ? fsname : "os2g:" + source).replace(",", "_"));
        options.add("subtype=os2g");
        options.add("default_permissions");
        options.add("attr_timeout=" + ttlSeconds);
        options.add("entry_timeout=" + ttlSeconds);
        options.add("negative_timeout=" + ttlSeconds);
        for (String o : fuseOptions) {
            String option = o.strip();
            if (option.equals("ro") && allowWrites) {
                throw new UsageError("-o ro and --allow-writes contradict each other: give one of them");
            }
            if (!option.isEmpty() && !option.equals("ro") && !options.contains(option)) {
                options.add(option);
            }
        }
        try {
            FuseMount.check(options);
        } catch (FuseMount.MountException e) {
            throw new UsageError(e.getMessage());
        }
        return new MountConfig(storeConfig, bucket, prefix, ttl, stagingConfig, agentConfig, fs, mount, options,
                agent == null ? null : agentSocket(agent), replies, expandTar, decompress, service.metricsAddress(),
                gpu == null ? -1 : gpu, cacheConfig);
    }

    /** The socket path of {@code unix:PATH}. */
    static Path agentSocket(String address) {
        if (!address.startsWith("unix:") || address.length() == 5) {
            throw new UsageError("--agent must be unix:PATH, the socket of os2g agent --listen: " + address);
        }
        return Path.of(address.substring(5)).toAbsolutePath().normalize();
    }

    static Duration parseTtl(String text) {
        if (text.equalsIgnoreCase("forever")) {
            return null;
        }
        try {
            long seconds = Long.parseLong(text);
            if (seconds < 0) {
                throw new NumberFormatException();
            }
            return Duration.ofSeconds(seconds);
        } catch (NumberFormatException e) {
            throw new UsageError("--metadata-ttl must be a number of seconds or 'forever': " + text);
        }
    }

    /** Permission bits only: a mount shows no set-user-id, set-group-id or sticky files. */
    static int parseMode(String option, String text) {
        try {
            int mode = Integer.parseInt(text, 8);
            if (mode < 0 || mode > 0777) {
                throw new NumberFormatException();
            }
            return mode;
        } catch (NumberFormatException e) {
            throw new UsageError(option + " must be an octal mode from 0000 to 0777, such as 0444: " + text);
        }
    }

    /** A user or group id given, or the caller's; (uid_t) -1 means "no change" to the kernel, not an owner. */
    private static int id(String option, Integer given, int caller) {
        if (given == null) {
            return caller;
        }
        if (given < 0) {
            throw new UsageError(option + " must be a user or group id from 0 to 2147483647: " + given);
        }
        return given;
    }

    /**
     * The staging dir of a mount passed on open, whose mount point this process does not know: named
     * after the process, with those of dead ones removed (a mount point's is reclaimed by the next mount).
     */
    private static Path preOpenedStagingDir() {
        Path parent = PrivateDirectory.sharedMemoryParent();
        StagingDirectory.removeDead(parent, "fd-");
        return parent.resolve("fd-" + ProcessHandle.current().pid());
    }

    /** A short stable name for a mount point, so a crashed mount's staging dir is reclaimed by the next. */
    static String mountId(Path mountPoint) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(mountPoint.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
