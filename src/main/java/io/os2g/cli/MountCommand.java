package io.os2g.cli;

import io.os2g.runtime.Gateway;
import io.os2g.runtime.MountConfig;
import io.os2g.runtime.MountConfigBuilder;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
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

    @Parameters(index = "0", paramLabel = "BUCKET[/PREFIX]", description = "Bucket, optionally with a prefix to mount as the root.")
    String source;

    @Parameters(index = "1", paramLabel = "MOUNTPOINT", description = {"An existing empty directory; or /dev/fd/N, a FUSE mount another process made",
            "(mount(2) with fd=N) and passed on open: served here, unmounted by that process."})
    String mountPoint;

    @Mixin
    StoreOptions store = new StoreOptions();

    @Option(names = "--agent", paramLabel = "unix:PATH|tcp://HOST:PORT",
            description = {"Use the agent process listening there (os2g agent) instead of one in this process: this process then holds no credentials",
                    "and opens no connection to the store. tcp://: an agent on a DPU or another machine, which posts chunks into this host's staging region."})
    String agent;

    @Mixin
    LinkOptions link = new LinkOptions();

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
            description = "Small files of a directory being read through to stage ahead of their open, per directory (a tree swept across sibling directories is staged whole, up to three quarters of the region; with --cache-dir the directory is also filled into the disk cache); 0 turns both off (default: ${DEFAULT-VALUE}).")
    int dirPrefetch;

    @Option(names = "--expand-tar",
            description = "Show each object NAME.tar also as a directory NAME.tar.d/ of its members (regular files and directories).")
    boolean expandTar;

    @Option(names = "--decompress",
            description = "Show each object NAME.gz or NAME.zst also as NAME, decompressed (exact size in stat; best read sequentially).")
    boolean decompress;

    @Option(names = "--gpu", paramLabel = "DEVICE",
            description = "Register the staging region with CUDA device DEVICE (page-locked, GPU-visible); with --agent unix:, the agent does; with tcp://, this host registers its own region.")
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

    @Mixin
    SharedCacheOptions sharedCache = new SharedCacheOptions();

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
                keepAotRecording();
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
        keepAotRecording();
        return 0;
    }

    /**
     * Marks this JVM's AOT recording as one to build the cache from, where the launcher asked for one
     * ({@code -Dos2g.aot.keep=FILE}): the mount ran and unmounted cleanly, so it loaded its read path.
     */
    private static void keepAotRecording() {
        String mark = System.getProperty("os2g.aot.keep");
        if (mark != null) {
            try {
                Files.writeString(Path.of(mark), "");
            } catch (IOException e) {
                // no mark: the launcher drops the recording and a later mount records again
            }
        }
    }

    /** A mount command from its command-line words, defaults filled in as for {@code os2g mount}. */
    static MountCommand parse(String... args) {
        MountCommand command = new MountCommand();
        new picocli.CommandLine(command).parseArgs(args);
        return command;
    }

    /** The mount these words ask for, the rules between them checked. */
    MountConfig config() {
        return new MountConfigBuilder(source, mountPoint)
                .store(store.settings())
                .agent(agent, agentReplies)
                .link(link.cert, link.key, link.ca, link.encryption)
                .fuseOptions(fuseOptions)
                .ownership(uid, gid, fileMode, dirMode)
                .writes(allowWrites, allowOverwrite, allowDelete)
                .metadataTtl(metadataTtl)
                .staging(stagingDir, stagingSize, chunkSize, maxReadahead, dirPrefetch)
                .views(expandTar, decompress)
                .gpu(gpu)
                .fsname(fsname)
                .daemon(daemon)
                .metrics(service.metricsAddress())
                .cache(cache.directory, cache.size, cache.minFreePercent)
                .sharedCache(sharedCache.url, sharedCache.endpoint, sharedCache.profile, sharedCache.key)
                .build();
    }
}
