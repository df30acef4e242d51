package io.os2g.runtime;

import io.os2g.agent.AgentConfig;
import io.os2g.diskcache.CacheConfig;
import io.os2g.host.FsConfig;
import io.os2g.sharedcache.SharedCacheConfig;
import io.os2g.staging.StagingConfig;
import io.os2g.store.StoreConfig;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import io.os2g.link.LinkAddress;
import io.os2g.link.LinkTls;
import java.time.Duration;
import java.util.List;

/**
 * Everything one mount needs, composed from the components' own configs.
 *
 * @param store how to reach the bucket; null when an agent process does (see {@code agentAddress})
 * @param prefix bucket prefix shown as the mount root: {@code ""} or ending in {@code /}
 * @param metadataTtl how long listings are trusted; null for forever
 * @param fuseOptions FUSE {@code -o} options (see {@link io.os2g.host.FuseMount})
 * @param agentAddress where the agent process serving this mount listens; null for an agent in this process
 * @param linkTls mutual TLS for a {@code tcp://} agent (null for a Unix socket, or plain TCP on loopback)
 * @param agentReplies with an agent process: lend the agent this mount's /dev/fuse so that it replies to READs
 *     itself where it shares this kernel (see {@code io.os2g.agentreplies}); false: the shim replies to every READ
 * @param expandTar show each {@code NAME.tar} object also as a directory {@code NAME.tar.d/} of its members
 * @param decompress show each {@code NAME.gz} and {@code NAME.zst} object also as {@code NAME}, decompressed
 * @param metricsAddress where to serve Prometheus metrics; null for nowhere
 * @param gpuDevice the CUDA device the staging region is registered with; -1 for none
 * @param cache the disk cache below staging; null for none (always null with an agent process: the agent's)
 * @param sharedCache the cluster's tier below the disk cache; null for none (always null with an agent process)
 */
public record MountConfig(StoreConfig store, String bucket, String prefix, Duration metadataTtl, StagingConfig staging,
                   AgentConfig agent, FsConfig fs, Path mountPoint, List<String> fuseOptions, LinkAddress agentAddress, LinkTls linkTls,
                   boolean agentReplies,
                   boolean expandTar, boolean decompress, InetSocketAddress metricsAddress,
                   int gpuDevice, CacheConfig cache, SharedCacheConfig sharedCache) {
}
