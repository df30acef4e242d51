package io.os2g.runtime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code --staging-size auto}: a quarter of the smaller of the memory this process's container may use
 * (cgroup v2 {@code memory.max}, else v1 {@code memory.limit_in_bytes}) and the memory available now
 * ({@code MemAvailable}), between 64 MiB and 16 GiB, in whole chunks. The region lives in {@code /dev/shm},
 * which the container's limit counts: a quarter leaves room for the mount's heap and the training
 * process, so a pod's mount is not OOM-killed by its own staging.
 */
public final class StagingSizeAuto {

    static final long MIN = 64L << 20;
    static final long MAX = 16L << 30;

    private StagingSizeAuto() {
    }

    public static long of(long chunk) {
        return of(Path.of("/"), chunk);
    }

    /** The size for a machine whose /proc and /sys lie under {@code root} (a test's). */
    static long of(Path root, long chunk) {
        long available = memAvailable(root);
        long limit = cgroupLimit(root);
        long basis = Math.min(available, limit);
        long size = Math.max(MIN, Math.min(MAX, basis / 4));
        return Math.max(chunk, size / chunk * chunk);
    }

    /** MemAvailable of /proc/meminfo, in bytes; unbounded when it cannot be read. */
    static long memAvailable(Path root) {
        try {
            for (String line : Files.readAllLines(root.resolve("proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux's /proc: no bound from it
        }
        return Long.MAX_VALUE;
    }

    /** The memory limit of this process's cgroup (v2, else v1), in bytes; unbounded for "max" or none. */
    static long cgroupLimit(Path root) {
        List<String> lines;
        try {
            lines = Files.readAllLines(root.resolve("proc/self/cgroup"));
        } catch (IOException e) {
            return Long.MAX_VALUE;
        }
        for (String line : lines) {
            String[] f = line.split(":", 3);
            if (f.length < 3) {
                continue;
            }
            String path = f[2].startsWith("/") ? f[2].substring(1) : f[2];
            if (f[0].equals("0") && f[1].isEmpty()) {
                return limit(root.resolve("sys/fs/cgroup").resolve(path).resolve("memory.max"));
            }
            if (List.of(f[1].split(",")).contains("memory")) {
                return limit(root.resolve("sys/fs/cgroup/memory").resolve(path).resolve("memory.limit_in_bytes"));
            }
        }
        return Long.MAX_VALUE;
    }

    private static long limit(Path file) {
        try {
            String value = Files.readString(file).strip();
            long bytes = value.equals("max") ? Long.MAX_VALUE : Long.parseLong(value);
            return bytes >= (1L << 60) ? Long.MAX_VALUE : bytes; // v1 says "no limit" with a huge number
        } catch (IOException | NumberFormatException e) {
            return Long.MAX_VALUE;
        }
    }
}
