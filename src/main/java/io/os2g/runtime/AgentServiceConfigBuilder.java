package io.os2g.runtime;

import io.os2g.PrivateDirectory;
import io.os2g.agent.AgentConfig;
import io.os2g.agent.AgentPolicy;
import io.os2g.link.LinkAddress;
import io.os2g.link.LinkTls;
import io.os2g.store.StoreConfig;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * An agent process ({@code os2g agent}) as the user asked for it, and the rules between its options:
 * {@link #build} checks them and fills in defaults. Every refusal is a {@link UsageError}.
 */
public final class AgentServiceConfigBuilder {

    private final String listen;
    private Function<String, StoreConfig> storeOf;
    private StoreSettings storeSettings;
    private String sharedCache;
    private String sharedCacheEndpoint;
    private String sharedCacheProfile;
    private Path sharedCacheKey;
    private Duration readDeadline = Duration.ofSeconds(60);
    private int maxFetches = AgentConfig.DEFAULT_MAX_IN_FLIGHT;
    private Path stagingDir;
    private Integer gpu;
    private List<String> serve = List.of();
    private boolean allowWrites;
    private boolean allowOverwrite;
    private boolean allowDelete;
    private InetSocketAddress metricsAddress;
    private Path cacheDir;
    private String cacheSize;
    private int cacheMinFree = 5;

    private Path linkCert;
    private Path linkKey;
    private Path linkCa;
    private String linkEncryption = "on";
    private String memory;

    /** @param listen {@code unix:PATH} or {@code tcp://ADDR:PORT}, where shims connect */
    public AgentServiceConfigBuilder(String listen) {
        this.listen = listen;
    }

    /** How to reach a bucket (endpoint, credentials, TLS, retries), for each mount a shim asks for. */
    public AgentServiceConfigBuilder store(StoreSettings settings) {
        settings.retry(); // its options' errors now, before anything starts
        this.storeSettings = settings;
        return store(settings::config, settings.readDeadline(), settings.maxFetches());
    }

    /** As above, from its parts (a test's store). */
    public AgentServiceConfigBuilder store(Function<String, StoreConfig> storeOf, Duration readDeadline, int maxFetches) {
        this.storeOf = storeOf;
        this.readDeadline = readDeadline;
        this.maxFetches = maxFetches;
        return this;
    }

    /** Where each mount's staging region is created; null for {@code /dev/shm/os2g-UID/agent-<socket-id>}. */
    public AgentServiceConfigBuilder stagingDir(Path dir) {
        this.stagingDir = dir;
        return this;
    }

    /** The CUDA device every region is registered with unless its mount asks for another; null for none. */
    public AgentServiceConfigBuilder gpu(Integer device) {
        this.gpu = device;
        return this;
    }

    /** The agent's own policy: the sources it serves ({@code BUCKET[/PREFIX]}, none for any) and the changes it makes. */
    public AgentServiceConfigBuilder policy(List<String> sources, boolean allowWrites, boolean allowOverwrite, boolean allowDelete) {
        this.serve = List.copyOf(sources);
        this.allowWrites = allowWrites;
        this.allowOverwrite = allowOverwrite;
        this.allowDelete = allowDelete;
        return this;
    }

    /** Where to serve Prometheus metrics; null for nowhere. */
    public AgentServiceConfigBuilder metrics(InetSocketAddress address) {
        this.metricsAddress = address;
        return this;
    }

    /**
     * The cluster's tier below the disk cache: {@code --shared-cache s3://BUCKET[/PREFIX]} (null for none),
     * {@code --shared-cache-endpoint} and {@code --shared-cache-profile} (null: the origin's),
     * {@code --shared-cache-key} (null: blocks checksummed, not signed).
     */
    public AgentServiceConfigBuilder sharedCache(String url, String endpoint, String profile, Path key) {
        this.sharedCache = url;
        this.sharedCacheEndpoint = endpoint;
        this.sharedCacheProfile = profile;
        this.sharedCacheKey = key;
        return this;
    }

    /** The disk cache below every mount's region: {@code --cache-dir} (null for none), {@code --cache-size}, {@code --cache-min-free}. */
    public AgentServiceConfigBuilder cache(Path directory, String size, int minFreePercent) {
        this.cacheDir = directory;
        this.cacheSize = size;
        this.cacheMinFree = minFreePercent;
        return this;
    }

    /**
     * Mutual TLS for a TCP listener: {@code --link-cert}, {@code --link-key}, {@code --link-ca} (null for
     * none), and {@code --link-encryption} ({@code on}, or {@code off} for a physically private link).
     */
    public AgentServiceConfigBuilder link(Path cert, Path key, Path ca, String encryption) {
        this.linkCert = cert;
        this.linkKey = key;
        this.linkCa = ca;
        this.linkEncryption = encryption;
        return this;
    }

    /** {@code --agent-memory}: staging all mounts together may take (null for no bound but the staging directory's room). */
    public AgentServiceConfigBuilder memory(String size) {
        this.memory = size;
        return this;
    }

    /** @throws UsageError for the first rule broken */
    public AgentServiceConfig build() {
        LinkAddress address = LinkSettings.address("--listen", listen);
        LinkTls tls = LinkSettings.tls("--listen", address, linkCert, linkKey, linkCa, linkEncryption);
        String id = address instanceof LinkAddress.Unix unix ? MountConfigBuilder.mountId(unix.path())
                : MountConfigBuilder.mountId(Path.of("/tcp", address.toString().replaceAll("[^A-Za-z0-9.]", "_")));
        Path dir = stagingDir != null ? stagingDir.toAbsolutePath().normalize()
                : PrivateDirectory.sharedMemoryParent().resolve("agent-" + id);
        long memoryBytes = memory == null ? 0 : Sizes.parse("--agent-memory", memory);
        MountConfigBuilder.checkWrites(allowWrites, allowOverwrite, allowDelete);
        List<String> sources = new ArrayList<>();
        for (String source : serve) {
            if (source.isEmpty() || source.startsWith("/")) {
                throw new UsageError("--serve must be BUCKET or BUCKET/PREFIX: " + source);
            }
            // a prefix ends in "/", as a mount's does
            sources.add(source.contains("/") && !source.endsWith("/") ? source + "/" : source);
        }
        return new AgentServiceConfig(address, tls, memoryBytes, dir, storeOf, readDeadline, maxFetches, MountConfigBuilder.gpuDevice(gpu), metricsAddress,
                CacheSettings.config(cacheDir, cacheSize, cacheMinFree),
                SharedCacheSettings.config(sharedCache, sharedCacheEndpoint, sharedCacheProfile, sharedCacheKey, storeSettings), new AgentPolicy(sources, allowWrites, allowOverwrite, allowDelete));
    }
}
