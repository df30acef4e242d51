package io.os2g.cli;

import io.os2g.agent.AgentConfig;
import io.os2g.host.FsConfig;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingException;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.RetryPolicy;
import io.os2g.store.StoreConfig;
import io.os2g.store.Tls;
import java.net.URI;
import java.nio.file.Files;
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
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "mount", sortOptions = false, usageHelpAutoWidth = true,
        description = {"Mount a bucket (or a prefix of it) read-only at MOUNTPOINT.",
                "Stays in the foreground until unmounted (fusermount -u MOUNTPOINT, Ctrl-C or SIGTERM).",
                "Credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN], --profile, --credentials-file, or --no-sign-request."})
final class MountCommand implements Callable<Integer> {

    private static final Logger LOG = LoggerFactory.getLogger(MountCommand.class);
    /** "forever" as a kernel attribute timeout: a year. */
    private static final long FOREVER_SECONDS = 365L * 24 * 3600;

    @Parameters(index = "0", paramLabel = "BUCKET[/PREFIX]", description = "Bucket, optionally with a prefix to mount as the root.")
    String source;

    @Parameters(index = "1", paramLabel = "MOUNTPOINT", description = "An existing empty directory.")
    String mountPoint;

    @Option(names = "--endpoint", paramLabel = "URL", description = "S3 endpoint (default: $AWS_ENDPOINT_URL or https://s3.amazonaws.com).")
    String endpoint;

    @Option(names = "--region", paramLabel = "REGION", description = "Signing region (default: $AWS_REGION or us-east-1).")
    String region;

    @Option(names = "--profile", paramLabel = "NAME", description = "Profile in ~/.aws/credentials (or in --credentials-file).")
    String profile;

    @Option(names = "--credentials-file", paramLabel = "FILE", description = "AWS-style credentials file to read.")
    Path credentialsFile;

    @Option(names = "--no-sign-request", description = "Send unsigned requests (public buckets).")
    boolean noSignRequest;

    @Option(names = "--ca-bundle", paramLabel = "FILE", description = "PEM file of the CAs that sign an https endpoint's certificate, trusted instead of the JDK's (default: $AWS_CA_BUNDLE if set).")
    Path caBundle;

    @Option(names = "--insecure-skip-verify", description = "Do not check the https endpoint's certificate. For test setups only: anyone on the path can then read and alter the data.")
    boolean insecureSkipVerify;

    @Option(names = "--virtual-host-style", description = "Address the bucket as a host name (default: path style).")
    boolean virtualHostStyle;

    @Option(names = "-o", paramLabel = "OPTION[,OPTION...]", split = ",",
            description = "FUSE mount options, e.g. allow_other (lets other users read the mount; off by default because the mount then serves the bucket with the credentials of whoever mounted it).")
    List<String> fuseOptions = new ArrayList<>();

    @Option(names = "--uid", paramLabel = "UID", description = "Owner of files and directories (default: the caller).")
    Integer uid;

    @Option(names = "--gid", paramLabel = "GID", description = "Group of files and directories (default: the caller's).")
    Integer gid;

    @Option(names = "--file-mode", paramLabel = "MODE", defaultValue = "0444", description = "Permission bits of files (default: ${DEFAULT-VALUE}).")
    String fileMode;

    @Option(names = "--dir-mode", paramLabel = "MODE", defaultValue = "0555", description = "Permission bits of directories (default: ${DEFAULT-VALUE}).")
    String dirMode;

    @Option(names = "--metadata-ttl", paramLabel = "SECONDS|forever", defaultValue = "300",
            description = "How long listings and attributes are trusted (default: ${DEFAULT-VALUE}); forever for datasets that do not change.")
    String metadataTtl;

    @Option(names = "--staging-dir", paramLabel = "DIR", description = "Where staging segments live (default: /dev/shm/os2g/<mount-id>).")
    Path stagingDir;

    @Option(names = "--staging-size", paramLabel = "SIZE", defaultValue = "1G", description = "Bound on staged and in-flight data (default: ${DEFAULT-VALUE}).")
    String stagingSize;

    @Option(names = "--chunk-size", paramLabel = "SIZE", defaultValue = "8M", description = "Unit of fetching, a power of two >= 64K (default: ${DEFAULT-VALUE}).")
    String chunkSize;

    @Option(names = "--max-readahead", paramLabel = "SIZE", defaultValue = "64M", description = "Readahead cap per open file (default: ${DEFAULT-VALUE}).")
    String maxReadahead;

    @Option(names = "--max-fetches", paramLabel = "N", defaultValue = "32", description = "Chunk fetches in flight at once (default: ${DEFAULT-VALUE}).")
    int maxFetches;

    @Option(names = "--dir-prefetch", paramLabel = "N", defaultValue = "256",
            description = "Small files of a directory being read through to stage ahead of their open; 0 turns it off (default: ${DEFAULT-VALUE}).")
    int dirPrefetch;

    @Option(names = "--request-timeout", paramLabel = "SECONDS", defaultValue = "10", description = "Deadline of one S3 request, body included (default: ${DEFAULT-VALUE}).")
    int requestTimeout;

    @Option(names = "--retries", paramLabel = "N", defaultValue = "6",
            description = "Retries of an S3 request that failed transiently (refused, reset, timed out, 5xx, SlowDown), backing off 100 ms doubling to 5 s: the default rides out about 3 s of outage (default: ${DEFAULT-VALUE}).")
    int retries;

    @Option(names = "--fsname", paramLabel = "NAME", description = "Source name shown in /proc/mounts and df (default: os2g:BUCKET[/PREFIX]).")
    String fsname;

    @Option(names = "--daemon", description = "Detach once the mount answers.")
    boolean daemon;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Option(names = "--debug", description = "Debug logging, and stack traces on errors.")
    boolean debug;

    @Override
    public Integer call() throws Exception {
        Logging.configure(debug);
        MountConfig config = config();
        if (daemon) {
            return Daemon.detach(config.mountPoint());
        }
        Preflight.fuseAvailable();
        Preflight.stagingFits(config.staging());
        MinioObjectStore store = new MinioObjectStore(config.store());
        Gateway gateway;
        try {
            Preflight.storeAnswers(store, config.store().endpoint(), config.prefix());
            gateway = Gateway.mount(config, store);
        } catch (StagingException e) {
            store.close();
            throw new UsageError(e.getMessage());
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
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
        String endpointText = endpoint != null ? endpoint
                : System.getenv().getOrDefault("AWS_ENDPOINT_URL", "https://s3.amazonaws.com");
        String regionText = region != null ? region : System.getenv().getOrDefault("AWS_REGION", "us-east-1");
        CredentialsResolver.Resolved credentials = new CredentialsResolver(System.getenv(), Path.of(System.getProperty("user.home")))
                .resolve(noSignRequest, profile, credentialsFile);
        LOG.debug("credentials: {} ({})", credentials.credentials(), credentials.source());
        if (requestTimeout < 1) {
            throw new UsageError("--request-timeout must be at least 1 second: " + requestTimeout);
        }
        if (retries < 0) {
            throw new UsageError("--retries must not be negative: " + retries);
        }
        if (maxFetches < 1) {
            throw new UsageError("--max-fetches must be at least 1: " + maxFetches);
        }
        RetryPolicy retry = new RetryPolicy(retries + 1, RetryPolicy.DEFAULT.baseDelay(), RetryPolicy.DEFAULT.maxDelay(),
                Duration.ofSeconds(requestTimeout));
        URI endpointUri = Preflight.endpoint(endpointText);
        StoreConfig store = new StoreConfig(endpointUri, regionText, bucket,
                credentials.credentials(), virtualHostStyle, retry, Math.max(16, maxFetches * 2), tls(endpointUri));

        Path mount = Preflight.mountPoint(mountPoint);
        long chunk = Sizes.parse("--chunk-size", chunkSize);
        if (Long.bitCount(chunk) != 1 || chunk < StagingConfig.DEFAULT_PAGE_SIZE || chunk > (1L << 30)) {
            throw new UsageError("--chunk-size must be a power of two between 64K and 1G: " + chunkSize);
        }
        long staging = Sizes.parse("--staging-size", stagingSize);
        if (staging < chunk) {
            throw new UsageError("--staging-size (" + stagingSize + ") is below one chunk (--chunk-size " + chunkSize + ")");
        }
        long readahead = Sizes.parse("--max-readahead", maxReadahead);
        if (dirPrefetch < 0) {
            throw new UsageError("--dir-prefetch must not be negative: " + dirPrefetch);
        }
        AgentConfig agent = new AgentConfig(chunk, Math.min(AgentConfig.DEFAULT_INITIAL_READAHEAD, readahead), readahead,
                maxFetches, dirPrefetch);

        Duration ttl = parseTtl(metadataTtl);
        Duration readDeadline = retry.deadline().plus(Duration.ofSeconds(requestTimeout));
        Path dir = stagingDir != null ? stagingDir.toAbsolutePath().normalize() : Path.of("/dev/shm/os2g", mountId(mount));
        StagingConfig stagingConfig = StagingConfig.of(dir, staging, readDeadline);

        FsConfig fs = new FsConfig(uid != null ? uid : Identity.uid(), gid != null ? gid : Identity.gid(),
                parseMode("--file-mode", fileMode), parseMode("--dir-mode", dirMode), System.currentTimeMillis(), readDeadline);

        long ttlSeconds = ttl == null ? FOREVER_SECONDS : ttl.toSeconds();
        List<String> options = new ArrayList<>();
        options.add("ro");
        options.add("fsname=" + (fsname != null ? fsname : "os2g:" + source).replace(",", "_"));
        options.add("subtype=os2g");
        options.add("default_permissions");
        options.add("attr_timeout=" + ttlSeconds);
        options.add("entry_timeout=" + ttlSeconds);
        options.add("negative_timeout=" + ttlSeconds);
        // keep the page cache across opens unless getattr shows a new mtime or size (a new object version)
        options.add("auto_cache");
        for (String o : fuseOptions) {
            String option = o.strip();
            if (!option.isEmpty() && !option.equals("ro") && !options.contains(option)) {
                options.add(option);
            }
        }
        return new MountConfig(store, prefix, ttl, stagingConfig, agent, fs, mount, options);
    }

    private Tls tls(URI endpoint) {
        if (!endpoint.getScheme().equals("https")) {
            return Tls.SYSTEM;
        }
        if (insecureSkipVerify) {
            LOG.warn("--insecure-skip-verify: the certificate of {} is NOT checked; anyone on the path can read and alter "
                    + "the data and see the signed requests. Use it for test setups only; give --ca-bundle for a private CA", endpoint);
            return new Tls(null, true);
        }
        Path bundle = caBundle;
        String fromEnv = System.getenv("AWS_CA_BUNDLE");
        if (bundle == null && fromEnv != null && !fromEnv.isBlank()) {
            bundle = Path.of(fromEnv);
        }
        if (bundle != null && !Files.isReadable(bundle)) {
            throw new UsageError((caBundle != null ? "--ca-bundle" : "AWS_CA_BUNDLE") + " is not a readable file: " + bundle);
        }
        return new Tls(bundle, false);
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

    static int parseMode(String option, String text) {
        try {
            int mode = Integer.parseInt(text, 8);
            if (mode < 0 || mode > 07777) {
                throw new NumberFormatException();
            }
            return mode;
        } catch (NumberFormatException e) {
            throw new UsageError(option + " must be an octal mode such as 0444: " + text);
        }
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
