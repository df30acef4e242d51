package io.os2g.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What /proc says of the thread behind a FUSE request: its process, and whether it is being torn down
 * by a signal. A FLUSH comes for every close(2) of every descriptor of a file, a forked child's
 * included, and for the descriptors a killed process leaves: only the writer's own close publishes
 * its file, and a writer killed mid-file publishes nothing.
 *
 * @param tgid the process of the thread; -1 when /proc does not show it (another pid namespace)
 * @param killed whether it is exiting because of a signal (PF_EXITING, and a signal in its exit code)
 */
record CallerProcess(int tgid, boolean killed) {

    /** PF_EXITING in /proc/PID/stat's flags: the task is in do_exit. */
    private static final long PF_EXITING = 0x4;

    static final CallerProcess UNKNOWN = new CallerProcess(-1, false);

    /** The caller behind {@code tid}, as the FUSE request header numbers it (0: not in this pid namespace). */
    static CallerProcess of(int tid) {
        if (tid <= 0) {
            return UNKNOWN;
        }
        try {
            int tgid = -1;
            for (String line : Files.readAllLines(Path.of("/proc", Integer.toString(tid), "status"))) {
                if (line.startsWith("Tgid:")) {
                    tgid = Integer.parseInt(line.substring(5).trim());
                    break;
                }
            }
            String stat = Files.readString(Path.of("/proc", Integer.toString(tid), "stat"));
            // fields after the command's closing parenthesis, from field 3 (state) on
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
            long flags = Long.parseLong(fields[9 - 3]);
            int exitCode = fields.length > 52 - 3 ? Integer.parseInt(fields[52 - 3]) : 0;
            return new CallerProcess(tgid, (flags & PF_EXITING) != 0 && (exitCode & 0x7f) != 0);
        } catch (IOException | RuntimeException e) {
            return UNKNOWN; // gone already, or not ours to see
        }
    }

    /** Whether /proc shows this caller (it is in this process's pid namespace, and alive). */
    boolean known() {
        return tgid > 0;
    }

    /** Whether this caller is a process other than {@code opener} (both known). */
    boolean otherThan(CallerProcess opener) {
        return tgid > 0 && opener.tgid > 0 && tgid != opener.tgid;
    }
}
