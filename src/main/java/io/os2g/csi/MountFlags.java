package io.os2g.csi;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A volume capability's {@code mount_flags} (a PersistentVolume's {@code spec.mountOptions}): os2g mount
 * options in the volume attributes' spelling ({@code metadata_ttl=forever}, {@code allow_writes}; an
 * entry may hold several, comma-separated), and the VFS flags a pod's bind mount takes ({@code ro},
 * {@code noexec}, {@code nosuid}, {@code nodev}, {@code noatime}, {@code nodiratime}).
 *
 * @param options os2g mount options by attribute name; a flag given alone is {@code "true"}
 * @param bindFlags the mount(2) flags for each pod's bind (0 for none)
 */
public record MountFlags(Map<String, String> options, long bindFlags) {

    /** The VFS flags a bind takes, with their mount(2) bits. */
    private static final Map<String, Long> VFS = Map.of("ro", Libc.MS_RDONLY, "nosuid", Libc.MS_NOSUID, "nodev", Libc.MS_NODEV,
            "noexec", Libc.MS_NOEXEC, "noatime", Libc.MS_NOATIME, "nodiratime", Libc.MS_NODIRATIME);

    public MountFlags {
        options = Map.copyOf(options);
    }

    /**
     * Splits {@code flags} into os2g options and VFS flags; which options exist is the mount's to check.
     *
     * @throws CsiException INVALID_ARGUMENT for an entry that is neither, or an option given twice with two values
     */
    public static MountFlags parse(List<String> flags) throws CsiException {
        Map<String, String> options = new TreeMap<>();
        long bind = 0;
        for (String entry : flags) {
            for (String item : entry.split(",")) {
                String flag = item.strip();
                if (flag.isEmpty()) {
                    continue;
                }
                Long bit = VFS.get(flag);
                if (bit != null) {
                    bind |= bit;
                    continue;
                }
                int eq = flag.indexOf('=');
                String name = eq < 0 ? flag : flag.substring(0, eq).strip();
                String value = eq < 0 ? "true" : flag.substring(eq + 1).strip();
                if (!name.matches("[a-z0-9_]+")) {
                    throw CsiException.invalid("mount option " + flag + " is neither an os2g mount option (name=value, "
                            + "spelled as the volume attributes) nor one of " + new TreeMap<>(VFS).keySet());
                }
                String before = options.put(name, value);
                if (before != null && !before.equals(value)) {
                    throw CsiException.invalid("mount option " + name + " is given twice: " + before + " and " + value);
                }
            }
        }
        return new MountFlags(options, bind);
    }

    boolean readOnly() {
        return (bindFlags & Libc.MS_RDONLY) != 0;
    }
}
