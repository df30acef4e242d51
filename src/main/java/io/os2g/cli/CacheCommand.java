package io.os2g.cli;

import io.os2g.diskcache.DiskCache;
import io.os2g.runtime.Sizes;
import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "cache", description = "Look into or empty a disk cache directory (--cache-dir).",
        subcommands = {CacheCommand.Stats.class, CacheCommand.Clear.class})
final class CacheCommand implements Runnable {

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
    }

    @Command(name = "stats", description = "Print what a disk cache holds: blocks, bytes, last use, free space (JSON).")
    static final class Stats implements Callable<Integer> {
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
        boolean help;

        @Parameters(index = "0", paramLabel = "DIR")
        Path directory;

        @Override
        public Integer call() {
            DiskCache.Summary s = onCache(directory, () -> DiskCache.summarize(directory));
            System.out.printf("{\"blocks\": %d, \"bytes\": %d, \"size\": \"%s\", \"oldest_use\": %s, \"newest_use\": %s, "
                            + "\"file_system_free_bytes\": %d, \"file_system_bytes\": %d}%n",
                    s.blocks(), s.bytes(), Sizes.format(s.bytes()), instant(s.oldestUseMillis()), instant(s.newestUseMillis()),
                    s.usableBytes(), s.totalBytes());
            return 0;
        }
    }

    @Command(name = "clear", description = "Delete every block of a disk cache (mounts using it fetch them again).")
    static final class Clear implements Callable<Integer> {
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
        boolean help;

        @Parameters(index = "0", paramLabel = "DIR")
        Path directory;

        @Override
        public Integer call() {
            long removed = onCache(directory, () -> DiskCache.clear(directory));
            System.out.println("os2g: removed " + removed + " blocks from " + directory);
            return 0;
        }
    }

    /** What a cache directory's operation returns; its failures are the user's one line. */
    private interface CacheOperation<T> {
        T run() throws IOException;
    }

    private static <T> T onCache(Path directory, CacheOperation<T> operation) {
        try {
            return operation.run();
        } catch (DiskCache.CacheDirectoryException e) {
            throw new UsageError(e.getMessage());
        } catch (IOException e) {
            throw new UsageError("cannot read " + directory + ": " + e.getMessage());
        }
    }

    private static String instant(long millis) {
        return millis == 0 ? "null" : "\"" + Instant.ofEpochMilli(millis) + "\"";
    }
}
