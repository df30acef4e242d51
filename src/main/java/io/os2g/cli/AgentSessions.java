package io.os2g.cli;

import io.os2g.agent.Agent;
import io.os2g.agent.AgentConfig;
import io.os2g.agent.DecompressedStore;
import io.os2g.agent.TarExpandingStore;
import io.os2g.link.AgentSession;
import io.os2g.link.MountSpec;
import io.os2g.link.StagingLayout;
import io.os2g.metrics.Stats;
import io.os2g.namespace.Namespace;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingDirectory;
import io.os2g.staging.StagingRegion;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.ObjectStore;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The agent process's mounts: for each shim that connects, a store client for its bucket, a staging
 * region of its own (so a shim that dies takes exactly its pages with it), a namespace and an agent.
 */
final class AgentSessions implements AgentSession.Factory {

    private final StoreOptions store;
    private final StagingDirectory parent;
    private final int maxFetches;
    private final AtomicInteger next = new AtomicInteger(1);

    AgentSessions(StoreOptions store, StagingDirectory parent, int maxFetches) {
        this.store = store;
        this.parent = parent;
        this.maxFetches = maxFetches;
    }

    @Override
    public AgentSession open(MountSpec spec) {
        StagingConfig staging = StagingConfig.of(parent.path().resolve("mount-" + next.getAndIncrement()),
                spec.stagingSize(), store.readDeadline());
        Preflight.stagingFits(staging);
        MinioObjectStore client = new MinioObjectStore(store.config(spec.bucket()));
        StagingRegion region = null;
        try {
            Preflight.storeAnswers(client, client.endpoint(), spec.prefix());
            region = StagingRegion.create(staging);
            ExtentIndex index = new ExtentIndex(region, spec.chunkSize());
            Duration ttl = spec.metadataTtlSeconds() < 0 ? null : Duration.ofSeconds(spec.metadataTtlSeconds());
            TarExpandingStore tars = spec.expandTar() ? new TarExpandingStore(client) : null;
            DecompressedStore decompressed = spec.decompress() ? new DecompressedStore(tars != null ? tars : client) : null;
            ObjectStore objects = decompressed != null ? decompressed : tars != null ? tars : client;
            Namespace namespace = new Namespace(objects, spec.prefix(), ttl);
            AgentConfig config = new AgentConfig(spec.chunkSize(), Math.min(AgentConfig.DEFAULT_INITIAL_READAHEAD, spec.maxReadahead()),
                    spec.maxReadahead(), maxFetches, spec.dirPrefetch());
            return new Session(new Agent(objects, index, config, namespace), client, tars, decompressed, region, index, namespace);
        } catch (RuntimeException e) {
            if (region != null) {
                region.close();
            }
            client.close();
            throw e;
        }
    }

    private record Session(Agent agent, MinioObjectStore store, TarExpandingStore tars, DecompressedStore decompressed,
                           StagingRegion region, ExtentIndex index,
                           Namespace namespace) implements AgentSession {

        @Override
        public StagingLayout layout() {
            StagingConfig c = region.config();
            return new StagingLayout(c.directory().toString(), c.capacity(), c.pageSize(), c.segmentSize());
        }

        @Override
        public String statsJson() {
            Map<String, Object> agentPart = GatewayStats.agent(store, tars, decompressed, agent, index);
            agentPart.put("cpu_seconds", Stats.processCpuSeconds());
            return Stats.json(agentPart);
        }

        @Override
        public void close() {
            agent.close();
            namespace.close();
            (decompressed != null ? decompressed : store).close(); // closes its decoders, then the store
            region.close();
        }
    }
}
