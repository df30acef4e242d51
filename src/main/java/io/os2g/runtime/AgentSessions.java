package io.os2g.runtime;

import io.os2g.diskcache.DiskCache;
import io.os2g.sharedcache.SharedCache;
import io.os2g.agent.Agent;
import io.os2g.agent.AgentPolicy;
import io.os2g.agent.AgentConfig;
import io.os2g.agent.Uploads;
import io.os2g.agentreplies.AgentReplier;
import io.os2g.link.AgentSession;
import io.os2g.link.KernelReplier;
import io.os2g.link.MountSpec;
import io.os2g.link.StagingRegionSpec;
import io.os2g.metrics.PrometheusMetrics;
import io.os2g.metrics.Stats;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingDirectory;
import io.os2g.store.StoreConfig;
import io.prometheus.metrics.core.metrics.Histogram;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent process's mounts: for each shim that connects, a store client for its bucket, a staging
 * region of its own (so a shim that dies takes exactly its pages with it), a namespace, an agent, and
 * the replier that answers READs on a /dev/fuse the shim may lend it.
 */
final class AgentSessions implements AgentSession.Factory {

    private static final Logger LOG = LoggerFactory.getLogger(AgentSessions.class);

    private final Function<String, StoreConfig> storeOf;
    private final Duration readDeadline;
    private final StagingDirectory parent;
    private final AgentPolicy policy;
    private final int maxFetches;
    private final AtomicInteger next = new AtomicInteger(1);
    private final Histogram getSeconds;
    private final Map<String, Session> live = new ConcurrentSkipListMap<>();

    private final int defaultGpu;
    /** The disk cache under every mount's staging region, shared by them; null for none. */
    private final DiskCache disk;
    /** The shared tier below the disk cache, shared by every session; null for none. */
    private final SharedCache shared;
    /** Bytes of staging all sessions together may take; 0 for no bound but the staging directory's room. */
    private final long memory;

    /**
     * @param storeOf how to reach a bucket (endpoint, credentials, retries)
     * @param readDeadline how long a read may wait for a fetch
     * @param getSeconds the histogram, labelled mount and source, that every session's GETs are timed into
     * @param defaultGpu the CUDA device regions are registered with when a mount asks for none; -1 for none
     */
    AgentSessions(Function<String, StoreConfig> storeOf, Duration readDeadline, StagingDirectory parent, int maxFetches,
                  Histogram getSeconds, int defaultGpu, DiskCache disk, SharedCache shared, AgentPolicy policy, long memory) {
        this.policy = policy;
        this.memory = memory;
        this.defaultGpu = defaultGpu;
        this.disk = disk;
        this.shared = shared;
        this.storeOf = storeOf;
        this.readDeadline = readDeadline;
        this.parent = parent;
        this.maxFetches = maxFetches;
        this.getSeconds = getSeconds;
    }

    Histogram getSeconds() {
        return getSeconds;
    }

    /** The mounts served now, for the metrics endpoint. */
    List<PrometheusMetrics.ServedMount> served() {
        List<PrometheusMetrics.ServedMount> mounts = new ArrayList<>();
        live.forEach((name, s) -> mounts.add(new PrometheusMetrics.ServedMount(name, s.source, s.stack.counters())));
        return mounts;
    }

    @Override
    public AgentSession open(MountSpec spec, AgentSession.Posting posting) {
        policy.checkMount(spec.bucket(), spec.prefix(), spec.writes());
        if (memory > 0) {
            long used = live.values().stream().mapToLong(s -> s.stack.region().config().capacity()).sum();
            if (used + spec.stagingSize() > memory) {
                throw new IllegalArgumentException("the agent's memory (--agent-memory " + Sizes.format(memory) + ") has "
                        + Sizes.format(Math.max(0, memory - used)) + " left, this mount asks " + Sizes.format(spec.stagingSize())
                        + " of staging: mount with a smaller --staging-size");
            }
        }
        String name = "mount-" + next.getAndIncrement();
        String source = spec.bucket() + "/" + spec.prefix();
        StagingConfig staging = StagingConfig.of(parent.path().resolve(name), spec.stagingSize(), readDeadline);
        StoreConfig storeConfig = storeOf.apply(spec.bucket());
        AgentConfig config = new AgentConfig(spec.chunkSize(), Math.min(AgentConfig.DEFAULT_INITIAL_READAHEAD, spec.maxReadahead()),
                spec.maxReadahead(), maxFetches, spec.dirPrefetch());
        AgentStack stack = AgentStack.forSession(storeConfig, staging, new AgentStack.Spec(spec.prefix(),
                spec.metadataTtlSeconds() < 0 ? null : Duration.ofSeconds(spec.metadataTtlSeconds()), config, spec.expandTar(),
                spec.decompress(), spec.gpuDevice() >= 0 ? spec.gpuDevice() : defaultGpu, spec.writes() ? policy : null,
                storeConfig.retry().deadline().plus(readDeadline), getSeconds.labelValues(name, source)::observe), disk, shared, posting);
        try {
            // a shim on another machine shares no kernel: nothing to lend
            KernelReplier replier = posting == null ? replier(stack.agent(), stack.index(), staging.directory()) : null;
            Session session = new Session(name, source, stack, replier);
            live.put(name, session);
            return session;
        } catch (RuntimeException e) {
            stack.close();
            throw e;
        }
    }

    /** Where the session takes a lent /dev/fuse to reply to READs itself; null where it cannot (a socket path too long). */
    private static KernelReplier replier(Agent agent, ExtentIndex index, Path stagingDirectory) {
        try {
            return AgentReplier.listen(agent, index.view(), stagingDirectory);
        } catch (IOException | IllegalArgumentException e) {
            LOG.info("the shim of {} replies to its own READs: {}", stagingDirectory, e.getMessage());
            return null;
        }
    }

    private final class Session implements AgentSession {
        private final String name;
        private final String source;
        private final AgentStack stack;
        private final KernelReplier replier;

        Session(String name, String source, AgentStack stack, KernelReplier replier) {
            this.name = name;
            this.source = source;
            this.stack = stack;
            this.replier = replier;
        }

        @Override
        public Agent agent() {
            return stack.agent();
        }

        @Override
        public ExtentIndex index() {
            return stack.index();
        }

        @Override
        public Uploads uploads() {
            return stack.uploads();
        }

        @Override
        public StagingRegionSpec layout() {
            StagingConfig c = stack.region().config();
            return new StagingRegionSpec(c.directory().toString(), c.capacity(), c.pageSize(), c.segmentSize());
        }

        @Override
        public KernelReplier kernelReplier() {
            return replier;
        }

        @Override
        public String statsJson() {
            Map<String, Object> agentPart = stack.stats();
            agentPart.put("cpu_seconds", Stats.processCpuSeconds());
            return Stats.json(agentPart);
        }

        /** The shim is gone: what it was writing is aborted, its region freed. */
        @Override
        public void close() {
            if (replier != null) {
                replier.close();
            }
            live.remove(name);
            getSeconds.remove(name, source);
            stack.close();
        }
    }
}
