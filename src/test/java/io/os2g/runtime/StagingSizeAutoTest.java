package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** --staging-size auto from a container's memory limit and the memory available, on a made-up /proc and /sys. */
@Tag("unit")
class StagingSizeAutoTest {

    private static final long MIB = 1 << 20, GIB = 1L << 30, CHUNK = 8 * MIB;

    @TempDir
    Path root;

    private void machine(long availableKb, String cgroupLine, String limitFile, String limit) throws IOException {
        Files.createDirectories(root.resolve("proc/self"));
        Files.writeString(root.resolve("proc/meminfo"), "MemTotal:       65000000 kB\nMemAvailable:   " + availableKb + " kB\n");
        Files.writeString(root.resolve("proc/self/cgroup"), cgroupLine + "\n");
        if (limitFile != null) {
            Files.createDirectories(root.resolve(limitFile).getParent());
            Files.writeString(root.resolve(limitFile), limit + "\n");
        }
    }

    @Test
    void aPodWithAFourGibLimitGetsAQuarterOfIt() throws IOException {
        machine(60_000_000, "0::/kubepods/pod1/c1", "sys/fs/cgroup/kubepods/pod1/c1/memory.max", Long.toString(4 * GIB));
        assertEquals(GIB, StagingSizeAuto.of(root, CHUNK));
    }

    @Test
    void noLimitTakesAQuarterOfWhatIsAvailableUpTo16Gib() throws IOException {
        machine(8 * 1024 * 1024, "0::/", "sys/fs/cgroup/memory.max", "max"); // 8 GiB available
        assertEquals(2 * GIB, StagingSizeAuto.of(root, CHUNK));
        machine(256L * 1024 * 1024, "0::/", "sys/fs/cgroup/memory.max", "max"); // 256 GiB available
        assertEquals(16 * GIB, StagingSizeAuto.of(root, CHUNK));
    }

    @Test
    void cgroupV1AndATinyLimitAndWholeChunks() throws IOException {
        machine(60_000_000, "5:memory:/docker/abc", "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", Long.toString(100 * MIB));
        assertEquals(64 * MIB, StagingSizeAuto.of(root, CHUNK), "never below 64 MiB");
        machine(60_000_000, "5:memory:/docker/abc", "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", Long.toString(1000 * MIB));
        assertEquals(248 * MIB, StagingSizeAuto.of(root, CHUNK), "250 MiB rounded down to whole 8 MiB chunks");
        machine(256L * 1024 * 1024, "5:memory:/docker/abc", "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712");
        assertEquals(16 * GIB, StagingSizeAuto.of(root, CHUNK), "v1's 'no limit'");
    }
}
