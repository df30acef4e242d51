package io.os2g.csi;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Mount processes started by this process with posix_spawn, each in a session of its own: they outlive
 * it where nothing kills a process group's neighbours (a host, a test; in a container, see {@link MounterClient}).
 */
final class LocalStarter implements MountStarter {

    /** The mount processes this process started and has not reaped: only waitpid tells when they end. */
    private final Set<Long> children = ConcurrentHashMap.newKeySet();

    @Override
    public long start(List<String> argv, List<String> env, int device, Path log) throws IOException {
        try {
            long pid = Libc.spawn(argv, env, device, log);
            children.add(pid);
            return pid;
        } catch (Libc.Failure e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    @Override
    public boolean ended(long pid, Path log) {
        if (Files.exists(MountStarter.exitFile(log))) {
            return true;
        }
        if (children.contains(pid)) {
            int status = Libc.reap((int) pid);
            if (status < 0) {
                return false;
            }
            children.remove(pid);
            MountStarter.writeExit(log, status);
            return true;
        }
        try { // started by this plugin's predecessor: init reaps it
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
            return stat.charAt(stat.lastIndexOf(')') + 2) == 'Z';
        } catch (IOException | RuntimeException e) {
            return true;
        }
    }
}
