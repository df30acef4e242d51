package io.os2g.cli;

import io.os2g.runtime.CacheDirectories;
import io.os2g.runtime.SharedCacheSettings;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "cache", description = "Look into or empty a disk cache directory (--cache-dir) or a shared cache (--shared-cache).",
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

    @Command(name = "stats", description = "Print what a disk cache holds (blocks, bytes, last use, free space) or a shared "
            + "cache (blocks, bytes, oldest and newest write), as JSON. A shared cache is reached with the store options.")
    static final class Stats implements Callable<Integer> {
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
        boolean help;

        @Parameters(index = "0", paramLabel = "DIR|s3://BUCKET[/PREFIX]")
        String target;

        @Mixin
        StoreOptions store = new StoreOptions();

        @Override
        public Integer call() {
            System.out.println(shared(target) ? SharedCacheSettings.statsJson(store.settings(), target)
                    : CacheDirectories.statsJson(Path.of(target)));
            return 0;
        }
    }

    private static boolean shared(String target) {
        return target.startsWith("s3://");
    }

    @Command(name = "clear", description = "Delete every block of a disk cache or a shared cache (mounts using it fetch them "
            + "again). A shared cache is reached with the store options.")
    static final class Clear implements Callable<Integer> {
        @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
        boolean help;

        @Parameters(index = "0", paramLabel = "DIR|s3://BUCKET[/PREFIX]")
        String target;

        @Mixin
        StoreOptions store = new StoreOptions();

        @Override
        public Integer call() {
            long removed = shared(target) ? SharedCacheSettings.clear(store.settings(), target) : CacheDirectories.clear(Path.of(target));
            System.out.println("os2g: removed " + removed + " blocks from " + target);
            return 0;
        }
    }
}
