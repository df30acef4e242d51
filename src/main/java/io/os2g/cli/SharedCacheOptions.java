package io.os2g.cli;

import picocli.CommandLine.Option;

/** The shared tier's options, on whichever process holds the store client ({@code mount}, or {@code agent}). */
final class SharedCacheOptions {

    @Option(names = "--shared-cache", paramLabel = "s3://BUCKET[/PREFIX]",
            description = "Keep fetched chunks also in this bucket of an S3-compatible store near the GPUs, shared by every node "
                    + "naming it, below the disk cache and above the origin (docs/SHARED-CACHE.md; default: none).")
    String url;

    @Option(names = "--shared-cache-endpoint", paramLabel = "URL",
            description = "The shared cache's S3 endpoint (default: the origin's --endpoint).")
    String endpoint;

    @Option(names = "--shared-cache-profile", paramLabel = "NAME",
            description = "The profile whose credentials the shared cache is read and written with (default: the origin's).")
    String profile;

    @Option(names = "--shared-cache-key", paramLabel = "FILE",
            description = "A secret of at least 32 bytes, the same on every node, that signs the shared cache's blocks and "
                    + "verifies them (default: blocks are checksummed, not signed).")
    java.nio.file.Path key;
}
