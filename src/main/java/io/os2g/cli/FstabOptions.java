package io.os2g.cli;

import io.os2g.runtime.UsageError;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * {@code -o} option lists in the form mount(8) and /etc/fstab use, mapped onto {@code os2g mount}'s own
 * options, so that {@code -o endpoint=http://minio:9000,metadata_ttl=forever,staging_size=8G,allow_other}
 * means {@code --endpoint http://minio:9000 --metadata-ttl forever --staging-size 8G -o allow_other}.
 * A name is one of the command's long options with dashes written as underscores; what mount(8) and
 * systemd keep for themselves ({@code _netdev}, {@code nofail}, {@code x-systemd.*}, ...) is dropped;
 * anything else stays a FUSE mount option ({@code ro} too: the mount command checks it against
 * {@code --allow-writes}).
 */
final class FstabOptions {

    /** Options of mount(8), systemd and fstab that mean nothing to the file system itself. */
    private static final Set<String> MOUNT_ONLY = Set.of("defaults", "_netdev", "nofail", "auto", "noauto", "user", "nouser",
            "users", "owner", "group", "rw", "sync", "async", "atime", "noatime", "relatime", "norelatime",
            "strictatime", "lazytime", "nodiratime", "diratime", "dev", "nodev", "suid", "nosuid", "exec", "noexec",
            "loud", "silent", "bg", "fg");

    /** Options of os2g mount that only make sense spelled out on a command line. */
    private static final Set<String> NOT_FROM_FSTAB = Set.of("--help", "-h", "--version");

    private FstabOptions() {
    }

    /**
     * Rewrites the {@code -o LIST} (and {@code -oLIST}) words of an {@code os2g mount} command line.
     *
     * @throws UsageError for a boolean option given a value, or a valued option given none
     */
    static String[] expand(String[] args, CommandSpec mount) {
        List<String> out = new ArrayList<>();
        List<String> fuse = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String list;
            if (arg.equals("-o") && i + 1 < args.length) {
                list = args[++i];
            } else if (arg.startsWith("-o") && arg.length() > 2 && !arg.startsWith("--")) {
                list = arg.substring(2);
            } else {
                out.add(arg);
                continue;
            }
            for (String item : list.split(",")) {
                translate(item.strip(), mount, out, fuse);
            }
        }
        if (!fuse.isEmpty()) {
            out.add("-o");
            out.add(String.join(",", fuse));
        }
        return out.toArray(String[]::new);
    }

    private static void translate(String item, CommandSpec mount, List<String> out, List<String> fuse) {
        if (item.isEmpty()) {
            return;
        }
        int eq = item.indexOf('=');
        String name = eq < 0 ? item : item.substring(0, eq);
        String value = eq < 0 ? null : item.substring(eq + 1);
        if (MOUNT_ONLY.contains(name) || name.startsWith("x-") || name.equals("comment")) {
            return;
        }
        String longName = "--" + name.replace('_', '-');
        OptionSpec option = NOT_FROM_FSTAB.contains(longName) ? null : mount.findOption(longName);
        if (option == null) {
            fuse.add(item);
            return;
        }
        boolean flag = option.arity().max() == 0;
        if (flag && value != null) {
            throw new UsageError("-o " + name + " takes no value: " + item);
        }
        if (!flag && (value == null || value.isEmpty())) {
            throw new UsageError("-o " + name + " needs a value (" + name + "=" + option.paramLabel() + ")");
        }
        out.add(longName);
        if (!flag) {
            out.add(value);
        }
    }
}
