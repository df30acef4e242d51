package io.os2g.cli;

import io.os2g.agent.AgentConfig;
import io.os2g.host.FsConfig;
import io.os2g.staging.StagingConfig;
import io.os2g.store.StoreConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * Everything one mount needs, composed from the components' own configs.
 *
 * @param prefix bucket prefix shown as the mount root: {@code ""} or ending in {@code /}
 * @param metadataTtl how long listings are trusted; null for forever
 * @param fuseOptions libfuse {@code -o} options
 */
record MountConfig(StoreConfig store, String prefix, Duration metadataTtl, StagingConfig staging,
                   AgentConfig agent, FsConfig fs, Path mountPoint, List<String> fuseOptions) {
}
