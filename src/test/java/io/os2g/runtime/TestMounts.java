package io.os2g.runtime;

import io.os2g.agent.AgentConfig;
import io.os2g.support.S3Fixture;
import java.io.IOException;
import java.nio.file.Path;

/**
 * In-process mounts of bucket "data" for the mount tests (1 MiB of staging in tmp/staging, 64 KiB
 * chunks, 5 s requests, one retry), and the store options of the agents the split-mode tests start.
 */
final class TestMounts {

    private TestMounts() {
    }

    static Gateway mount(S3Fixture s3, Path tmp, Path mnt, String maxReadahead) throws IOException {
        return mount(s3, tmp, mnt, maxReadahead, AgentConfig.DEFAULT_DIRECTORY_PREFETCH, AgentConfig.DEFAULT_MAX_IN_FLIGHT);
    }

    static Gateway mount(S3Fixture s3, Path tmp, Path mnt, String maxReadahead, int dirPrefetch, int maxFetches) throws IOException {
        StoreSettings store = store(s3, tmp, maxFetches, 5);
        return Gateway.open(new MountConfigBuilder("data", mnt.toString()).store(store)
                .staging(tmp.resolve("staging"), "1M", "64K", maxReadahead, dirPrefetch).build());
    }

    /** The S3 server's endpoint and keys (a credentials file in tmp), {@code maxFetches} GETs at a time, one retry. */
    static StoreSettings store(S3Fixture s3, Path tmp, int maxFetches, int requestTimeoutSeconds) throws IOException {
        return new StoreSettings(s3.endpoint().toString(), null, null, S3Fixture.credentialsFile(tmp), false, null,
                false, false, maxFetches, requestTimeoutSeconds, 1);
    }
}
