package io.os2g.runtime;

import io.os2g.metrics.Stats;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** A running mount's counters as its control file {@code /.os2g/stats} gives them, for tools outside the mount ({@code os2g warm}). */
public final class MountStats {

    private MountStats() {
    }

    /**
     * The document of the mount at {@code root}, parsed.
     *
     * @throws java.nio.file.NoSuchFileException when {@code root} is not (or no longer) an os2g mount
     */
    public static Map<String, Object> read(Path root) throws IOException {
        return Stats.parse(Files.readString(root.resolve(".os2g/stats")));
    }
}
