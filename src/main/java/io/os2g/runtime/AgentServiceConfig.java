package io.os2g.runtime;

import io.os2g.agent.AgentPolicy;
import io.os2g.diskcache.CacheConfig;
import io.os2g.sharedcache.SharedCacheConfig;
import io.os2g.link.LinkAddress;
import io.os2g.link.LinkTls;
import io.os2g.store.StoreConfig;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.Function;

/**
 * Everything an agent process needs ({@code os2g agent}).
 *
 * @param listen where shims connect: a Unix socket, or a TCP port
 * @param linkTls mutual TLS for a TCP port (null for a Unix socket, or plain TCP on loopback)
 * @param memory bytes of staging all mounts together may take; 0 for no bound but the staging directory's room
 * @param stagingDir where each mount's staging region is created ({@code mount-N} under it)
 * @param storeOf how to reach a bucket (endpoint, credentials, TLS, retries), for each mount a shim asks for
 * @param readDeadline how long a read may wait for a fetch
 * @param maxFetches chunk fetches in flight at once, per mount
 * @param gpuDevice the CUDA device every staging region is registered with unless its mount asks for another; -1 for none
 * @param metricsAddress where to serve Prometheus metrics; null for nowhere
 * @param cache the disk cache below every mount's staging region (keys name the bucket); null for none
 * @param sharedCache the cluster's tier below the disk cache, for every mount; null for none
 * @param policy the sources it serves and the changes it makes, whatever a shim asks
 */
public record AgentServiceConfig(LinkAddress listen, LinkTls linkTls, long memory, Path stagingDir, Function<String, StoreConfig> storeOf, Duration readDeadline,
                                 int maxFetches, int gpuDevice, InetSocketAddress metricsAddress, CacheConfig cache,
                                 SharedCacheConfig sharedCache, AgentPolicy policy) {
}
