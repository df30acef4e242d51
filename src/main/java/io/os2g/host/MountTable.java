package io.os2g.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The kernel's view of what is mounted where ({@code /proc/self/mountinfo}). */
public final class MountTable {

    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    private MountTable() {
    }

    /** Whether something is mounted exactly at {@code path} (an absolute, normalised path). */
    public static boolean isMountPoint(Path path) {
        return fsTypeAt(path) != null;
    }

    /** The file-system type mounted at {@code path} (the last one, if stacked), or null. */
    public static String fsTypeAt(Path path) {
        String wanted = path.toAbsolutePath().normalize().toString();
        String type = null;
        try {
            List<String> lines = Files.readAllLines(MOUNTINFO);
            for (String line : lines) {
                // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
                String[] f = line.split(" ");
                if (f.length > 4 && unescape(f[4]).equals(wanted)) {
                    int dash = line.indexOf(" - ");
                    type = dash < 0 ? "?" : line.substring(dash + 3).split(" ")[0];
                }
            }
        } catch (IOException e) {
            return null;
        }
        return type;
    }

    /** mountinfo escapes space, tab, newline and backslash as octal. */
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length()) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
