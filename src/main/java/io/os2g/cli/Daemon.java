package io.os2g.cli;

import io.os2g.PrivateDirectory;
import io.os2g.runtime.MountConfigBuilder;
import io.os2g.runtime.Preflight;
import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code --daemon}: starts the same command again without {@code --daemon}, in a new session
 * (setsid), and returns once the mount shows in the mount table, or with the child's exit code and
 * the last lines of its log if it fails first.
 */
final class Daemon {

    private static final long TIMEOUT_MILLIS = 60_000;

    private Daemon() {
    }

    static int detach(Path mountPoint) throws IOException, InterruptedException {
        ProcessHandle.Info self = ProcessHandle.current().info();
        List<String> command = new ArrayList<>();
        if (Files.isExecutable(Path.of("/usr/bin/setsid"))) {
            command.add("/usr/bin/setsid");
        }
        command.add(self.command().orElseThrow(() -> new UsageError("--daemon: cannot find this process's command")));
        for (String arg : self.arguments().orElse(new String[0])) {
            if (!arg.equals("--daemon")) {
                command.add(arg);
            }
        }
        Path log = createLog(mountPoint);
        Process child = new ProcessBuilder(command)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectErrorStream(true)
                .start();
        long deadline = System.currentTimeMillis() + TIMEOUT_MILLIS;
        while (System.currentTimeMillis() < deadline) {
            if (Preflight.isMountPoint(mountPoint)) {
                System.err.println("os2g: mounted at " + mountPoint + " (pid " + child.pid() + ", log " + log + ")");
                return 0;
            }
            if (!child.isAlive()) {
                List<String> lines = Files.readAllLines(log);
                lines.subList(Math.max(0, lines.size() - 5), lines.size()).forEach(System.err::println);
                return child.exitValue() == 0 ? 1 : child.exitValue();
            }
            Thread.sleep(20);
        }
        child.destroy();
        throw new UsageError("mount did not appear within " + TIMEOUT_MILLIS / 1000 + " s; see " + log);
    }

    /**
     * A new log file, mode 0600, in a directory only this user can reach: {@code /run/os2g} for root,
     * else {@code $XDG_RUNTIME_DIR/os2g} or {@code /tmp/os2g-UID}. A mount point's earlier log is replaced;
     * nothing of another user's (a planted link, a file) is followed or written.
     */
    static Path createLog(Path mountPoint) {
        Path dir = logDirectory();
        Path log = dir.resolve("os2g-" + MountConfigBuilder.mountId(mountPoint) + ".log");
        try {
            PrivateDirectory.ensure(dir);
            Files.deleteIfExists(log);
            Files.newByteChannel(log, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"))).close();
            return log;
        } catch (IOException e) {
            throw new UsageError("--daemon: cannot make its log in " + dir + ": " + e.getMessage());
        }
    }

    private static Path logDirectory() {
        int uid = PrivateDirectory.effectiveUid();
        if (uid == 0) {
            return Path.of("/run/os2g");
        }
        String runtime = System.getenv("XDG_RUNTIME_DIR");
        if (runtime != null && !runtime.isBlank() && Files.isDirectory(Path.of(runtime))) {
            return Path.of(runtime, "os2g");
        }
        return Path.of("/tmp", "os2g-" + uid);
    }
}
