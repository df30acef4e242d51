package io.os2g.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The disk cache's options, on whichever process holds the store client ({@code mount}, or {@code agent}). */
final class CacheOptions {

    @Option(names = "--cache-dir", paramLabel = "DIR",
            description = "Keep fetched chunks on local disk here, below the staging region; kept across remounts and shared "
                    + "by every os2g on the node naming the same DIR (default: no disk cache).")
    Path directory;

    @Option(names = "--cache-size", paramLabel = "SIZE",
            description = "Bound on the disk cache's blocks (default: its file system, less --cache-min-free).")
    String size;

    @Option(names = "--cache-min-free", paramLabel = "PERCENT", defaultValue = "5",
            description = "Share of the disk cache's file system kept free (default: ${DEFAULT-VALUE}).")
    int minFreePercent;
}
