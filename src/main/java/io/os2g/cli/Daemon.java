package io.os2g.cli;

import io.os2g.host.MountTable;
import io.os2g.runtime.UsageError;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
        Path log = Path.of(System.getProperty("java.io.tmpdir"), "os2g-" + MountCommand.mountId(mountPoint) + ".log");
        Process child = new ProcessBuilder(command)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .redirectOutput(ProcessBuilder.Redirect.to(log.toFile()))
                .redirectErrorStream(true)
                .start();
        long deadline = System.currentTimeMillis() + TIMEOUT_MILLIS;
        while (System.currentTimeMillis() < deadline) {
            if (MountTable.isMountPoint(mountPoint)) {
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
}
