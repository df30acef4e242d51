package io.os2g.cli;

import io.os2g.runtime.Sizes;
import io.os2g.runtime.TarIndexer;
import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code os2g index BUCKET/KEY.tar}: writes the sidecar index {@code KEY.tar.idx} beside a tar, so that
 * {@code --expand-tar} lists its members with one small GET instead of walking its headers.
 */
@Command(name = "index", mixinStandardHelpOptions = true,
        description = {"Write the sidecar index KEY.tar.idx of a tar object (its members' paths, offsets and sizes),",
                "so that mounts with --expand-tar list the tar without reading its headers. Format: docs/TAR.md."})
final class IndexCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "BUCKET/KEY.tar", description = "The tar object to index.")
    String source;

    @Option(names = "--output", paramLabel = "FILE", description = "Write the index to FILE ('-': standard output) instead of uploading it as KEY.tar.idx.")
    String output;

    @Mixin
    StoreOptions store = new StoreOptions();

    @Override
    public Integer call() throws IOException {
        int slash = source.indexOf('/');
        if (slash <= 0 || !source.endsWith(".tar") || source.length() - slash - 1 <= ".tar".length()) {
            throw new UsageError("expected BUCKET/KEY.tar, the key of a tar object: " + source);
        }
        String bucket = source.substring(0, slash);
        long start = System.nanoTime();
        TarIndexer.Indexed index = TarIndexer.index(store.settings(), bucket, source.substring(slash + 1), output == null);
        if (index.problem() != null) {
            System.err.println("os2g: " + index.key() + " is corrupt (" + index.problem() + "): no index written");
            return 1;
        }
        String target;
        if (output == null) {
            target = "s3://" + bucket + "/" + index.key() + ".idx";
        } else if (output.equals("-")) {
            System.out.write(index.sidecar());
            System.out.flush();
            target = "standard output";
        } else {
            Files.write(Path.of(output), index.sidecar());
            target = output;
        }
        System.err.printf("indexed %d files (%d other members skipped) of %s (%s) in %.1f s -> %s%n", index.files(),
                index.skipped(), index.key(), Sizes.format(index.tarSize()), (System.nanoTime() - start) / 1e9, target);
        return 0;
    }
}
