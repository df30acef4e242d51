package io.os2g.runtime;

import io.os2g.PrivateDirectory;
import io.os2g.agent.AgentConfig;
import io.os2g.diskcache.CacheConfig;
import io.os2g.sharedcache.SharedCacheConfig;
import io.os2g.host.FsConfig;
import io.os2g.host.FuseMount;
import io.os2g.host.WritePolicy;
import io.os2g.link.LinkAddress;
import io.os2g.link.LinkTls;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingDirectory;
import io.os2g.store.StoreConfig;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * A mount as the user asked for it, in the words of the command line, fstab and the CSI volume
 * attributes (all three come here), and the rules between those words: {@link #build} checks them,
 * fills in defaults and composes the kernel mount options. Every refusal is a {@link UsageError}
 * naming the option.
 */
public final class MountConfigBuilder {

    /** Half of it holds parts waiting for their upload: room for two parts of 8 MiB (S3's parts are at least 5 MiB). */
    private static final long MIN_WRITE_STAGING = 32L << 20;
    /** "forever" as a kernel attribute timeout: a year. */
    private static final long FOREVER_SECONDS = 365L * 24 * 3600;

    private final String source;
    private final String mountPoint;
    private Function<String, StoreConfig> storeOf;
    private StoreSettings storeSettings;
    private Duration readDeadline = Duration.ofSeconds(60);
    private int maxFetches = AgentConfig.DEFAULT_MAX_IN_FLIGHT;
    private String agent;
    private String agentReplies = "on";
    private Path linkCert;
    private Path linkKey;
    private Path linkCa;
    private String linkEncryption;
    private List<String> fuseOptions = List.of();
    private Integer uid;
    private Integer gid;
    private String fileMode;
    private String dirMode;
    private boolean allowWrites;
    private boolean allowOverwrite;
    private boolean allowDelete;
    private String metadataTtl = "300";
    private Path stagingDir;
    private String stagingSize = "1G";
    private String chunkSize = "8M";
    private String maxReadahead = "256M";
    private int dirPrefetch = AgentConfig.DEFAULT_DIRECTORY_PREFETCH;
    private boolean expandTar;
    private boolean decompress;
    private Integer gpu;
    private String fsname;
    private boolean daemon;
    private InetSocketAddress metricsAddress;
    private Path cacheDir;
    private String cacheSize;
    private int cacheMinFree = 5;
    private String sharedCache;
    private String sharedCacheEndpoint;
    private String sharedCacheProfile;
    private Path sharedCacheKey;

    /**
     * @param source {@code BUCKET[/PREFIX]}
     * @param mountPoint an existing directory, or {@code /dev/fd/N} of a FUSE mount another process made
     */
    public MountConfigBuilder(String source, String mountPoint) {
        this.source = Objects.requireNonNull(source);
        this.mountPoint = Objects.requireNonNull(mountPoint);
    }

    /** How to reach a bucket (endpoint, credentials, retries); not asked with an agent, which reaches the store itself. */
    public MountConfigBuilder store(StoreSettings settings) {
        settings.retry(); // its options' errors now, before anything starts
        this.storeSettings = settings;
        return store(settings::config, settings.readDeadline(), settings.maxFetches());
    }

    /** As above, from its parts (a test's store). */
    public MountConfigBuilder store(Function<String, StoreConfig> storeOf, Duration readDeadline, int maxFetches) {
        this.storeOf = storeOf;
        this.readDeadline = readDeadline;
        this.maxFetches = maxFetches;
        return this;
    }

    /** {@code unix:PATH} or {@code tcp://HOST:PORT} of an agent process; null for the agent in this process. */
    public MountConfigBuilder agent(String address, String replies) {
        this.agent = address;
        this.agentReplies = replies;
        return this;
    }

    /**
     * The mutual TLS of a {@code tcp://} agent: {@code --link-cert}, {@code --link-key}, {@code --link-ca}
     * (null for none), and {@code --link-encryption} ({@code off} asks for an unencrypted link; null for on).
     */
    public MountConfigBuilder link(Path cert, Path key, Path ca, String encryption) {
        this.linkCert = cert;
        this.linkKey = key;
        this.linkCa = ca;
        this.linkEncryption = encryption;
        return this;
    }

    /** Options for the kernel mount ({@code -o}), after the os2g options among them were taken out. */
    public MountConfigBuilder fuseOptions(List<String> options) {
        this.fuseOptions = List.copyOf(options);
        return this;
    }

    /** Owner, group and modes shown; null for the defaults (the caller; 0444/0555, 0644/0755 with writes). */
    public MountConfigBuilder ownership(Integer uid, Integer gid, String fileMode, String dirMode) {
        this.uid = uid;
        this.gid = gid;
        this.fileMode = fileMode;
        this.dirMode = dirMode;
        return this;
    }

    public MountConfigBuilder writes(boolean allowWrites, boolean allowOverwrite, boolean allowDelete) {
        this.allowWrites = allowWrites;
        this.allowOverwrite = allowOverwrite;
        this.allowDelete = allowDelete;
        return this;
    }

    /** Seconds, or {@code forever}. */
    public MountConfigBuilder metadataTtl(String ttl) {
        this.metadataTtl = ttl;
        return this;
    }

    /**
     * @param dir null for {@code /dev/shm/os2g-UID/<mount-id>}
     * @param size a size or {@code auto}
     */
    public MountConfigBuilder staging(Path dir, String size, String chunkSize, String maxReadahead, int dirPrefetch) {
        this.stagingDir = dir;
        this.stagingSize = size;
        this.chunkSize = chunkSize;
        this.maxReadahead = maxReadahead;
        this.dirPrefetch = dirPrefetch;
        return this;
    }

    public MountConfigBuilder views(boolean expandTar, boolean decompress) {
        this.expandTar = expandTar;
        this.decompress = decompress;
        return this;
    }

    /** The CUDA device to register the staging region with; null for none. */
    public MountConfigBuilder gpu(Integer device) {
        this.gpu = device;
        return this;
    }

    /** The source name in /proc/mounts; null for {@code os2g:BUCKET[/PREFIX]}. */
    public MountConfigBuilder fsname(String name) {
        this.fsname = name;
        return this;
    }

    /** Whether the mount detaches once it answers. */
    public MountConfigBuilder daemon(boolean detach) {
        this.daemon = detach;
        return this;
    }

    /** Where to serve Prometheus metrics; null for nowhere. */
    public MountConfigBuilder metrics(InetSocketAddress address) {
        this.metricsAddress = address;
        return this;
    }

    /**
     * The cluster's tier below the disk cache: {@code --shared-cache s3://BUCKET[/PREFIX]} (null for none),
     * {@code --shared-cache-endpoint} and {@code --shared-cache-profile} (null: the origin's),
     * {@code --shared-cache-key} (null: blocks checksummed, not signed).
     */
    public MountConfigBuilder sharedCache(String url, String endpoint, String profile, Path key) {
        this.sharedCache = url;
        this.sharedCacheEndpoint = endpoint;
        this.sharedCacheProfile = profile;
        this.sharedCacheKey = key;
        return this;
    }

    /** The mount's own disk cache: {@code --cache-dir} (null for none), {@code --cache-size} (null: the file system's room), {@code --cache-min-free}. */
    public MountConfigBuilder cache(Path directory, String size, int minFreePercent) {
        this.cacheDir = directory;
        this.cacheSize = size;
        this.cacheMinFree = minFreePercent;
        return this;
    }

    /** @throws UsageError for the first rule broken */
    public MountConfig build() {
        int slash = source.indexOf('/');
        String bucket = slash < 0 ? source : source.substring(0, slash);
        String prefix = slash < 0 ? "" : source.substring(slash + 1);
        if (bucket.isEmpty()) {
            throw new UsageError("no bucket name in " + source);
        }
        if (!prefix.isEmpty() && !prefix.endsWith("/")) {
            prefix = prefix + "/";
        }
        // with an agent, the agent resolves credentials and talks to the store; this process never does
        StoreConfig storeConfig = agent == null ? storeOf.apply(bucket) : null;

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
        CacheConfig cache = CacheSettings.config(cacheDir, cacheSize, cacheMinFree);
        if (cache != null && agent != null) {
            throw new UsageError("the disk cache is the agent's: give --cache-dir to os2g agent, not to a mount with --agent");
        }
        if (sharedCache != null && agent != null) {
            throw new UsageError("the shared cache is the agent's: give --shared-cache to os2g agent, not to a mount with --agent");
        }
        SharedCacheConfig shared = SharedCacheSettings.config(sharedCache, sharedCacheEndpoint, sharedCacheProfile, sharedCacheKey, storeSettings);
        boolean replies = switch (agentReplies) {
            case "on" -> true;
            case "off" -> false;
            default -> throw new UsageError("--agent-replies must be on or off: " + agentReplies);
        };
        if (dirPrefetch < 0) {
            throw new UsageError("--dir-prefetch must not be negative: " + dirPrefetch);
        }
        AgentConfig agentConfig = new AgentConfig(chunk, Math.min(AgentConfig.DEFAULT_INITIAL_READAHEAD, readahead), readahead,
                maxFetches, dirPrefetch);

        Duration ttl = parseTtl(metadataTtl);
        boolean preOpened = Preflight.preOpened(mount);
        if (preOpened && daemon) {
            throw new UsageError("--daemon cannot pass on a /dev/fd mount point: the process that mounted it runs this one");
        }
        Path dir = stagingDir != null ? stagingDir.toAbsolutePath().normalize()
                : preOpened ? preOpenedStagingDir() : PrivateDirectory.sharedMemoryParent().resolve(mountId(mount));
        StagingConfig stagingConfig = StagingConfig.of(dir, staging, readDeadline);

        checkWrites(allowWrites, allowOverwrite, allowDelete);
        if (allowWrites && staging < MIN_WRITE_STAGING) {
            throw new UsageError("--allow-writes needs --staging-size of at least " + Sizes.format(MIN_WRITE_STAGING)
                    + " (written files are uploaded from it in parts of 8M): " + stagingSize);
        }
        FsConfig fs = new FsConfig(id("--uid", uid, CallerIds.uid()), id("--gid", gid, CallerIds.gid()),
                parseMode("--file-mode", fileMode != null ? fileMode : allowWrites ? "0644" : "0444"),
                parseMode("--dir-mode", dirMode != null ? dirMode : allowWrites ? "0755" : "0555"), System.currentTimeMillis(), readDeadline,
                mount.toAbsolutePath().normalize().toString(), new WritePolicy(allowWrites, allowOverwrite, allowDelete));

        LinkAddress agentAddress = agent == null ? null : LinkSettings.address("--agent", agent);
        LinkTls linkTls = agent == null ? null : LinkSettings.tls("--agent", agentAddress, linkCert, linkKey, linkCa, linkEncryption);
        if (agentAddress == null && (linkCert != null || linkKey != null || linkCa != null || linkEncryption != null)) {
            throw new UsageError("--link-cert, --link-key, --link-ca and --link-encryption are for a mount with --agent tcp://HOST:PORT");
        }
        return new MountConfig(storeConfig, bucket, prefix, ttl, stagingConfig, agentConfig, fs, mount, kernelOptions(ttl),
                agentAddress, linkTls, replies, expandTar, decompress, metricsAddress,
                gpuDevice(gpu), cache, shared);
    }

    /** The kernel mount's options: os2g's own, then the user's (without {@code ro}: a read-only mount answers EROFS itself). */
    private List<String> kernelOptions(Duration ttl) {
        long ttlSeconds = ttl == null ? FOREVER_SECONDS : ttl.toSeconds();
        List<String> options = new ArrayList<>();
        // not "ro": the kernel would refuse writes to /.os2g/prefetch
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
        return options;
    }

    /** A CUDA device number given, or -1 for none. */
    static int gpuDevice(Integer gpu) {
        if (gpu != null && gpu < 0) {
            throw new UsageError("--gpu must be a CUDA device number (0, 1, ...): " + gpu);
        }
        return gpu == null ? -1 : gpu;
    }

    /** Overwrites and deletes are kinds of writes: each needs writes allowed. */
    static void checkWrites(boolean allowWrites, boolean allowOverwrite, boolean allowDelete) {
        if ((allowOverwrite || allowDelete) && !allowWrites) {
            throw new UsageError((allowOverwrite ? "--allow-overwrite" : "--allow-delete") + " needs --allow-writes");
        }
    }

    /** Seconds, or null for {@code forever}. */
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

    /** A short stable name for a mount point (or an agent's socket), so a crashed one's staging dir is reclaimed by the next. */
    public static String mountId(Path mountPoint) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(mountPoint.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
