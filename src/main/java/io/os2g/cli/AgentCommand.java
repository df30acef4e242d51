package io.os2g.cli;

import io.os2g.runtime.AgentService;
import io.os2g.runtime.AgentServiceConfig;
import io.os2g.runtime.AgentServiceConfigBuilder;
import io.os2g.runtime.UsageError;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "agent", sortOptions = false, usageHelpAutoWidth = true,
        description = {"Run the agent: the object-store client, prefetching and staging, in a process of its own (on a DPU's cores,",
                "or on cores set aside for it), serving mounts made with os2g mount --agent unix:PATH. One agent serves several mounts.",
                "Stays in the foreground until SIGINT/SIGTERM. Credentials as for os2g mount; the mounts hold none."})
final class AgentCommand implements Callable<Integer> {

    private static final Logger LOG = LoggerFactory.getLogger(AgentCommand.class);

    @Option(names = "--listen", required = true, paramLabel = "unix:PATH|tcp://ADDR:PORT",
            description = {"Where to serve mounts: a Unix socket (created 0600), or a TCP address for mounts on other machines",
                    "(with --link-cert, --link-key and --link-ca unless it is a loopback address)."})
    String listen;

    @Mixin
    LinkOptions link = new LinkOptions();

    @Option(names = "--agent-memory", paramLabel = "SIZE",
            description = "Staging memory all mounts served together may take (each mount's --staging-size); a mount beyond it is refused. Default: the staging directory's room.")
    String agentMemory;

    @Mixin
    StoreOptions store = new StoreOptions();

    @Option(names = "--staging-dir", paramLabel = "DIR",
            description = "Where each mount's staging region is created, mount-N under it (default: /dev/shm/os2g-<uid>/agent-<socket-id>, private to the user).")
    Path stagingDir;

    @Option(names = "--cpus", paramLabel = "N",
            description = "Bound on the agent's fetch and decode parallelism (its scheduler's threads). Pin the process to as many cores with taskset -c or systemd CPUAffinity.")
    Integer cpus;

    @Option(names = "--serve", paramLabel = "BUCKET[/PREFIX]",
            description = "Serve only mounts of this bucket, or of this prefix and below (repeatable; default: any bucket the credentials reach).")
    java.util.List<String> serve = new java.util.ArrayList<>();

    @Option(names = "--allow-writes", description = "Take new files written through the mounts it serves (each mount also needs --allow-writes).")
    boolean allowWrites;

    @Option(names = "--allow-overwrite", description = "With --allow-writes: let writes and renames replace existing keys.")
    boolean allowOverwrite;

    @Option(names = "--allow-delete", description = "With --allow-writes: let mounts delete keys, and rename away keys they did not write.")
    boolean allowDelete;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Option(names = "--gpu", paramLabel = "DEVICE",
            description = "Register each mount's staging region with CUDA device DEVICE (page-locked, GPU-visible), unless the mount asks for another.")
    Integer gpu;

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Mixin
    CacheOptions cache = new CacheOptions();

    @Mixin
    SharedCacheOptions sharedCache = new SharedCacheOptions();

    @Override
    public Integer call() throws Exception {
        service.configureLogging();
        if (cpus != null) {
            if (cpus < 1) {
                throw new UsageError("--cpus must be at least 1: " + cpus);
            }
            // virtual threads (every fetch and decode) run on this many carrier threads; set before the first starts
            System.setProperty("jdk.virtualThreadScheduler.parallelism", Integer.toString(cpus));
            System.setProperty("jdk.virtualThreadScheduler.maxPoolSize", Integer.toString(cpus));
        }
        AgentServiceConfig config = new AgentServiceConfigBuilder(listen)
                .store(store.settings())
                .stagingDir(stagingDir)
                .gpu(gpu)
                .policy(serve, allowWrites, allowOverwrite, allowDelete)
                .metrics(service.metricsAddress())
                .cache(cache.directory, cache.size, cache.minFreePercent)
                .sharedCache(sharedCache.url, sharedCache.endpoint, sharedCache.profile, sharedCache.key)
                .link(link.cert, link.key, link.ca, link.encryption)
                .memory(agentMemory)
                .build();
        AgentService agent = AgentService.start(config);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            agent.close();
            LOG.info("agent stopped");
            stopped.countDown();
        }, "os2g-agent-shutdown"));
        InetSocketAddress metricsAddress = config.metricsAddress();
        LOG.info("agent listening on {} (staging under {}{}{})", agent.listening(), config.stagingDir(), cpus == null ? "" : ", " + cpus + " cpus",
                metricsAddress == null ? "" : "; metrics at http://" + metricsAddress.getHostString() + ":" + agent.metricsPort() + "/metrics");
        stopped.await();
        return 0;
    }
}
