package io.os2g.cli;

import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "stats", description = "Print a mount's counters (MOUNTPOINT/.os2g/stats, JSON).")
final class StatsCommand implements Callable<Integer> {

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Parameters(index = "0", paramLabel = "MOUNTPOINT")
    Path mountPoint;

    @Override
    public Integer call() {
        Path stats = mountPoint.resolve(".os2g/stats");
        try {
            System.out.print(Files.readString(stats, StandardCharsets.UTF_8));
            return 0;
        } catch (NoSuchFileException e) {
            throw new UsageError(mountPoint + " is not an os2g mount (no " + stats + ")");
        } catch (IOException e) {
            throw new UsageError("cannot read " + stats + ": " + e.getMessage());
        }
    }
}
