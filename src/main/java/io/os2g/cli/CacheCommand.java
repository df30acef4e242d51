package io.os2g.cli;

import io.os2g.runtime.CacheDirectories;
import java.nio.file.Path;
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
            System.out.println(CacheDirectories.statsJson(directory));
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
            long removed = CacheDirectories.clear(directory);
            System.out.println("os2g: removed " + removed + " blocks from " + directory);
            return 0;
        }
    }
}
