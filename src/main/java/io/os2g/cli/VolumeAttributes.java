package io.os2g.cli;

import io.os2g.runtime.CsiPlugin;
import io.os2g.runtime.UsageError;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * A CSI volume's attributes as {@code os2g mount} words: {@code bucket} and {@code prefix} make the source,
 * every other attribute is one of the mount's long options in its fstab spelling ({@code metadata_ttl: "forever"}
 * is {@code --metadata-ttl forever}; a flag takes {@code "true"} or {@code "false"}). A PersistentVolume's
 * mountOptions come as more of them, spelled alike ({@code metadata_ttl=forever}). Each is checked alone and
 * then all together, by the checks {@code os2g mount} makes, so that an error names its attribute or option.
 */
final class VolumeAttributes implements CsiPlugin.VolumeOptions {

    static final String BUCKET = "bucket";
    static final String PREFIX = "prefix";
    /** Options the plugin sets for each mount (where it lives, how it signs) or that would escape it. */
    private static final Set<String> PLUGIN_ONLY = Set.of("staging_dir", "credentials_file", "profile", "shared_cache_profile", "shared_cache_key", "no_sign_request",
            "daemon", "log_file", "agent", "help", "version");

    /** An existing directory that is not a mount: the mount point the checks are made with. */
    private final Path checkedAt;
    private final CommandSpec mount = new CommandLine(new MountCommand()).getCommandSpec();

    VolumeAttributes(Path checkedAt) {
        this.checkedAt = checkedAt;
    }

    @Override
    public List<String> of(Map<String, String> attributes, Map<String, String> options) {
        String bucket = attributes.get(BUCKET);
        if (bucket == null || bucket.isBlank()) {
            throw new UsageError("volume attribute " + BUCKET + " is required");
        }
        String prefix = attributes.getOrDefault(PREFIX, "");
        if (prefix.startsWith("/") || bucket.contains("/")) {
            throw new UsageError("volume attributes " + BUCKET + " and " + PREFIX + " name a bucket and a key prefix: "
                    + bucket + ", " + prefix);
        }
        List<String> words = new ArrayList<>(List.of(prefix.isEmpty() ? bucket : bucket + "/" + prefix));
        Map<String, String> given = new TreeMap<>();
        Map<String, String> culprits = new TreeMap<>();
        attributes.forEach((name, value) -> {
            if (!name.equals(BUCKET) && !name.equals(PREFIX)) {
                given.put(name, value);
                culprits.put(name, "volume attribute " + name);
            }
        });
        for (Map.Entry<String, String> e : new TreeMap<>(options).entrySet()) {
            String name = e.getKey();
            if (name.equals(BUCKET) || name.equals(PREFIX)) {
                throw new UsageError("mount option " + name + " is the volume's to say, as a volume attribute");
            }
            String before = given.put(name, e.getValue());
            if (before != null && !before.equals(e.getValue())) {
                throw new UsageError("mount option " + name + "=" + e.getValue() + " and volume attribute " + name + "=" + before + " differ");
            }
            culprits.putIfAbsent(name, "mount option " + name);
        }
        for (Map.Entry<String, String> e : given.entrySet()) {
            List<String> option = option(culprits.get(e.getKey()), e.getKey(), e.getValue());
            check(words.getFirst(), option, culprits.get(e.getKey()));
            words.addAll(option);
        }
        check(words.getFirst(), words.subList(1, words.size()), options.isEmpty() ? "volume attributes" : "volume attributes and mount options");
        return words;
    }

    private List<String> option(String what, String name, String value) {
        if (PLUGIN_ONLY.contains(name)) {
            throw new UsageError(what + " is the plugin's to set, not the volume's");
        }
        OptionSpec option = name.matches("[a-z0-9_]+") ? mount.findOption("--" + name.replace('_', '-')) : null;
        if (option == null) {
            throw new UsageError(what + " is not an os2g mount option (docs/KUBERNETES.md lists them)");
        }
        if (option.arity().max() == 0) {
            return switch (value) {
                case "true" -> List.of(option.longestName());
                case "false" -> List.of();
                default -> throw new UsageError(what + " is a flag: \"true\" or \"false\", not \"" + value + "\"");
            };
        }
        if (value.isEmpty()) {
            throw new UsageError(what + " needs a value");
        }
        return List.of(option.longestName(), value);
    }

    /** Parses {@code options} as {@code os2g mount} would, unsigned at a plain directory; {@code what} names the culprit. */
    private void check(String source, List<String> options, String what) {
        List<String> args = new ArrayList<>(List.of(source, checkedAt.toString(), "--no-sign-request"));
        args.addAll(options);
        try {
            MountCommand.parse(args.toArray(String[]::new)).config();
        } catch (UsageError | CommandLine.ParameterException e) {
            throw new UsageError(what + ": " + e.getMessage());
        }
    }
}
