package io.os2g;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The package table of the design (../shared/DESIGN.md, and docs/ARCHITECTURE.md), read from the
 * sources: which os2g packages each package's code names (imports and qualified names, comments left
 * out). {@code ""} is the root package's vocabulary ({@link Errno}, {@link ErrnoException},
 * {@link WarningLimiter}, {@link PrivateDirectory}); the leaves of the table may use it.
 */
@Tag("unit")
class PackageRulesTest {

    private static final Path SOURCES = Path.of("src/main/java/io/os2g");
    private static final Pattern NAMED = Pattern.compile("\\bio\\.os2g\\.(?:([a-z][a-z0-9]*)\\.|([A-Z]))");

    /** The design's arrows: what each package may name besides itself. */
    private static final Map<String, Set<String>> DESIGN = Map.ofEntries(
            Map.entry("fuse", Set.of()), // self-contained
            Map.entry("s3server", Set.of()), // the demo server: on no production path
            Map.entry("codec", Set.of("")),
            Map.entry("metrics", Set.of("")),
            Map.entry("staging", Set.of("")),
            Map.entry("diskcache", Set.of("")),
            Map.entry("store", Set.of("")),
            Map.entry("sharedcache", Set.of("", "diskcache", "store")), // blocks keyed as the disk's, through the store client
            Map.entry("namespace", Set.of("", "store")), // its listing interface, which store and link provide
            Map.entry("agent", Set.of("", "namespace", "staging", "store", "codec", "diskcache", "sharedcache")),
            Map.entry("link", Set.of("", "agent", "namespace", "staging", "store")),
            Map.entry("agentreplies", Set.of("", "fuse", "link", "agent", "namespace", "staging")),
            Map.entry("host", Set.of("", "fuse", "link", "namespace", "staging", "metrics")),
            Map.entry("csi", Set.of("", "fuse")), // mounting for another process
            Map.entry("runtime", Set.of("", "fuse", "host", "link", "agentreplies", "agent", "namespace", "staging", "store",
                    "codec", "metrics", "diskcache", "sharedcache", "csi")),
            Map.entry("cli", Set.of("", "runtime")));

    @Test
    void everyPackageNamesOnlyWhatItsArrowsAllow() throws IOException {
        Map<String, Set<String>> broken = new TreeMap<>();
        Map<String, Set<String>> named = named();
        assertEquals(new TreeSet<>(DESIGN.keySet()), new TreeSet<>(named.keySet()), "a package without a rule, or a rule without a package");
        named.forEach((pkg, uses) -> uses.stream().filter(u -> !DESIGN.get(pkg).contains(u))
                .forEach(u -> broken.computeIfAbsent(pkg, k -> new TreeSet<>()).add(u.isEmpty() ? "io.os2g" : u)));
        assertTrue(broken.isEmpty(), "packages naming what they must not: " + broken);
    }

    /** For each package under io.os2g, the os2g packages its code names ("" for the root package). */
    private static Map<String, Set<String>> named() throws IOException {
        Map<String, Set<String>> named = new TreeMap<>();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(SOURCES)) {
            files = walk.filter(p -> p.toString().endsWith(".java") && !p.getParent().equals(SOURCES)).toList();
        }
        for (Path file : files) {
            String pkg = SOURCES.relativize(file).getName(0).toString();
            Set<String> uses = named.computeIfAbsent(pkg, k -> new TreeSet<>());
            Matcher m = NAMED.matcher(code(Files.readString(file)));
            while (m.find()) {
                String used = m.group(1) != null ? m.group(1) : "";
                if (!used.equals(pkg)) {
                    uses.add(used);
                }
            }
        }
        return named;
    }

    /**
     * The source without its comments and string literals: a class named in a string (the optional S3
     * server's command, loaded where its jar is installed) is no compile-time arrow.
     */
    private static String code(String source) {
        String withoutStrings = source.replaceAll("\"(?:\\\\.|[^\"\\\\\\n])*\"", "\"\"");
        return withoutStrings.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
    }
}
