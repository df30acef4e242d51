package io.os2g.cli;

import io.os2g.runtime.MountStats;
import io.os2g.runtime.Preflight;
import io.os2g.runtime.Sizes;
import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code os2g warm MNT/PATH...}: stages files and subtrees of an os2g mount before they are read,
 * through the mount's {@code /.os2g/warm} control file, and follows the agent's progress in
 * {@code /.os2g/stats}. Counters are the mount's: two warms of one mount at once see each other's.
 */
@Command(name = "warm", usageHelpAutoWidth = true, description = {
        "Stage files and directories of an os2g mount before they are read, with progress.",
        "Refuses more than the staging region holds unless --partial."})
final class WarmCommand implements Callable<Integer> {

    private static final Duration POLL = Duration.ofMillis(200);
    /** No file staged or failed for this long: the agent is not getting anywhere. */
    private static final Duration STALLED = Duration.ofSeconds(120);

    @Parameters(arity = "1..*", paramLabel = "PATH", description = "Files or directories under one os2g mount.")
    List<Path> paths;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Option(names = "--partial", description = "Stage as much as the staging region holds (in walk order) when the files do not all fit.")
    boolean partial;

    private record Target(String relative, long size) {
    }

    @Override
    public Integer call() throws Exception {
        Path root = null;
        List<Target> targets = new ArrayList<>();
        for (Path path : paths) {
            Path absolute = path.toAbsolutePath().normalize();
            Path mount = mountOf(absolute);
            if (root != null && !root.equals(mount)) {
                throw new UsageError("warm: " + path + " is on another mount than " + root + " (warm one mount at a time)");
            }
            root = mount;
            collect(root, absolute, targets);
        }
        Map<String, Object> stats = stats(root);
        Map<?, ?> staging = (Map<?, ?>) ((Map<?, ?>) stats.get("agent")).get("staging");
        if (staging == null) {
            throw new UsageError("warm: the agent of " + root + " is not connected");
        }
        long capacity = number(staging, "capacity_bytes");
        long page = number(staging, "page_bytes");
        long total = 0;
        long footprint = 0;
        int fits = 0;
        for (Target t : targets) {
            total += t.size();
            footprint += pages(t.size(), page);
            if (footprint <= capacity) {
                fits++;
            }
        }
        if (footprint > capacity) {
            if (!partial) {
                throw new UsageError(String.format(Locale.ROOT, "warm: %s in %,d files is more than the staging region holds (%s);"
                        + " warm part of it, or pass --partial to stage the first %,d files", Sizes.approximate(total),
                        targets.size(), Sizes.approximate(capacity), fits));
            }
            targets = targets.subList(0, fits);
            total = targets.stream().mapToLong(Target::size).sum();
        }
        return warm(root, targets, total);
    }

    private int warm(Path root, List<Target> targets, long total) throws IOException, InterruptedException {
        Map<String, Object> before = stats(root);
        StringBuilder lines = new StringBuilder();
        for (Target t : targets) {
            lines.append(t.relative()).append('\n');
        }
        // O_TRUNC: a warm that is still staging files from an earlier list drops them for this one
        Files.writeString(root.resolve(".os2g/warm"), lines, StandardCharsets.UTF_8,
                StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
        Progress progress = new Progress(System.err, System.console() != null, targets.size(), total);
        long started = System.nanoTime();
        long lastChange = started;
        long[] last = {-1, -1, -1};
        while (true) {
            Map<String, Object> now = stats(root);
            long files = delta(now, before, "files_staged");
            long bytes = delta(now, before, "bytes_staged");
            long failed = delta(now, before, "files_failed")
                    + number((Map<?, ?>) now.get("hint_lines"), "rejected") - number((Map<?, ?>) before.get("hint_lines"), "rejected");
            progress.show(files, bytes, failed, System.nanoTime() - started);
            if (files + failed >= targets.size()) {
                progress.done();
                double seconds = (System.nanoTime() - started) / 1e9;
                System.out.printf(Locale.ROOT, "warmed %,d files, %s in %.1f s (%.0f MB/s)%s%n", files, Sizes.approximate(bytes),
                        seconds, bytes / 1e6 / Math.max(seconds, 1e-3), failed == 0 ? "" : String.format(Locale.ROOT,
                                "; %,d could not be staged (see the mount's log)", failed));
                return failed == 0 ? 0 : 1;
            }
            if (files != last[0] || bytes != last[1] || failed != last[2]) {
                last = new long[] {files, bytes, failed};
                lastChange = System.nanoTime();
            } else if (System.nanoTime() - lastChange > STALLED.toNanos()) {
                progress.done();
                System.err.printf("os2g: warm: no progress for %d s (%,d of %,d files staged); see the mount's log%n",
                        STALLED.toSeconds(), files, targets.size());
                return 1;
            }
            Thread.sleep(POLL);
        }
    }

    /** The os2g mount that holds {@code path}: the nearest mount point above it with a control directory. */
    private static Path mountOf(Path path) {
        if (!Files.exists(path)) {
            throw new UsageError("warm: " + path + " does not exist");
        }
        for (Path dir = Files.isDirectory(path) ? path : path.getParent(); dir != null; dir = dir.getParent()) {
            if (Preflight.isMountPoint(dir)) {
                if (Files.exists(dir.resolve(".os2g/stats"))) {
                    return dir;
                }
                break;
            }
        }
        throw new UsageError("warm: " + path + " is not on an os2g mount");
    }

    private static void collect(Path root, Path path, List<Target> into) throws IOException {
        try (Stream<Path> walk = Files.walk(path)) {
            walk.forEach(p -> {
                try {
                    BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
                    if (a.isRegularFile() && !root.relativize(p).startsWith(".os2g")) {
                        into.add(new Target(root.relativize(p).toString(), a.size()));
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (UncheckedIOException e) {
            throw new UsageError("warm: cannot walk " + path + ": " + e.getCause().getMessage());
        }
    }

    private static Map<String, Object> stats(Path root) throws IOException {
        try {
            return MountStats.read(root);
        } catch (NoSuchFileException e) {
            throw new UsageError("warm: " + root + " is no longer an os2g mount");
        }
    }

    private static long pages(long size, long page) {
        return Math.max(1, (size + page - 1) / page) * page;
    }

    private static long delta(Map<String, Object> now, Map<String, Object> before, String counter) {
        return number(warm(now), counter) - number(warm(before), counter);
    }

    private static Map<?, ?> warm(Map<String, Object> stats) {
        Object warm = ((Map<?, ?>) stats.get("agent")).get("warm");
        if (!(warm instanceof Map<?, ?> m)) {
            throw new UsageError("warm: the agent of this mount is not connected");
        }
        return m;
    }

    private static long number(Map<?, ?> map, String key) {
        return map.get(key) instanceof Number n ? n.longValue() : 0;
    }

    /** The progress line: a bar on a terminal (redrawn in place), a line every few seconds otherwise. */
    static final class Progress {
        private static final int WIDTH = 30;
        private static final long LINE_EVERY_NANOS = Duration.ofSeconds(5).toNanos();

        private final PrintStream out;
        private final boolean terminal;
        private final long files;
        private final long bytes;
        private long lastLine = -LINE_EVERY_NANOS;

        Progress(PrintStream out, boolean terminal, long files, long bytes) {
            this.out = out;
            this.terminal = terminal;
            this.files = files;
            this.bytes = bytes;
        }

        void show(long doneFiles, long doneBytes, long failed, long elapsedNanos) {
            if (!terminal && elapsedNanos - lastLine < LINE_EVERY_NANOS) {
                return;
            }
            lastLine = elapsedNanos;
            out.print((terminal ? "\r" : "") + line(doneFiles, doneBytes, failed, elapsedNanos) + (terminal ? "" : "\n"));
            out.flush();
        }

        String line(long doneFiles, long doneBytes, long failed, long elapsedNanos) {
            double fraction = bytes > 0 ? Math.min(1, (double) doneBytes / bytes) : (files > 0 ? (double) doneFiles / files : 1);
            int filled = (int) Math.round(fraction * WIDTH);
            double seconds = elapsedNanos / 1e9;
            double rate = seconds > 0 ? doneBytes / seconds : 0;
            String eta = rate > 0 ? String.format(Locale.ROOT, "%.0f s", (bytes - doneBytes) / rate) : "?";
            return String.format(Locale.ROOT, "[%s%s] %s / %s  %,d/%,d files%s  %.1f MB/s  ETA %s   ",
                    "#".repeat(filled), " ".repeat(WIDTH - filled), Sizes.approximate(doneBytes), Sizes.approximate(bytes),
                    doneFiles, files, failed > 0 ? String.format(Locale.ROOT, " (%,d failed)", failed) : "", rate / 1e6, eta);
        }

        void done() {
            if (terminal) {
                out.println();
            }
        }
    }
}
