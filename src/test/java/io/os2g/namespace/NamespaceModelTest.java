package io.os2g.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.support.ReferenceStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The namespace against a model: for random key sets (seeded, so a failure replays), walking the tree
 * reaches exactly the keys under the mounted prefix whose every segment is a valid name and that no
 * directory hides, each by exactly one path, and never crashes. Keys with {@code ..}, {@code .},
 * empty segments (a leading {@code /}, {@code //}), NUL or overlong names never address anything,
 * and nothing outside the mounted prefix is ever reached.
 */
@Tag("unit")
class NamespaceModelTest {

    private static final String[] ATOMS = {"a", "b", "c", ".", "..", "", "d e", "ü", "x.jpg", "\0", "n\0l",
        "p", "q", "l".repeat(EntryName.NAME_MAX), "l".repeat(EntryName.NAME_MAX + 1)};

    static List<Long> seeds() {
        List<Long> seeds = new ArrayList<>();
        for (long s = 1; s <= 300; s++) {
            seeds.add(s);
        }
        return seeds;
    }

    @ParameterizedTest
    @MethodSource("seeds")
    void walkReachesExactlyTheValidVisibleKeys(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        ReferenceStore store = new ReferenceStore();
        Set<String> keys = new HashSet<>();
        // half the cases mount the prefix p/ and put keys beside it (q/..., p/../q) that must stay out of reach
        String rootPrefix = random.nextBoolean() ? "" : "p/";
        int count = 1 + random.nextInt(40);
        for (int i = 0; i < count; i++) {
            int depth = 1 + random.nextInt(4);
            StringBuilder key = new StringBuilder(random.nextInt(3) == 0 ? "" : rootPrefix);
            for (int d = 0; d < depth; d++) {
                if (d > 0) {
                    key.append('/');
                }
                key.append(ATOMS[random.nextInt(ATOMS.length)]);
            }
            if (random.nextInt(8) == 0) {
                key.append('/'); // a marker object
            }
            if (!key.isEmpty()) {
                keys.add(key.toString());
            }
        }
        for (String key : keys) {
            store.put(key, key.length());
        }

        Set<String> mounted = new HashSet<>();
        for (String key : keys) {
            if (key.startsWith(rootPrefix) && key.length() > rootPrefix.length()) {
                mounted.add(key.substring(rootPrefix.length()));
            }
        }
        Map<String, Long> expected = new TreeMap<>();
        for (String path : mounted) {
            if (visible(path, mounted)) {
                expected.put(path, (long) (rootPrefix.length() + path.length()));
            }
        }
        Namespace ns = new Namespace(store, rootPrefix, Duration.ofMinutes(1));
        Map<String, Long> walked = new TreeMap<>();
        walk(ns, ns.root(), "", walked);
        assertEquals(expected, walked, "prefix: " + rootPrefix + ", keys: " + keys);
        for (String path : walked.keySet()) {
            assertEquals(rootPrefix + path, ((Node.File) ns.resolve("/" + path)).key());
        }
    }

    private static boolean visible(String key, Set<String> keys) {
        for (String segment : key.split("/", -1)) {
            if (EntryName.parse(segment).isEmpty()) {
                return false;
            }
        }
        for (String other : keys) {
            if (other.startsWith(key + "/")) {
                return false; // a directory of the same name hides it
            }
        }
        return true;
    }

    private static void walk(Namespace ns, Node.Dir dir, String path, Map<String, Long> files) {
        for (Map.Entry<String, Node> e : ns.list(dir).entries().entrySet()) {
            assertTrue(EntryName.parse(e.getKey()).isPresent(), "not a file name: " + e.getKey());
            String child = path.isEmpty() ? e.getKey() : path + "/" + e.getKey();
            switch (e.getValue()) {
                case Node.Dir sub -> walk(ns, sub, child, files);
                case Node.File file -> {
                    Long previous = files.put(child, file.size());
                    assertEquals(null, previous, "reached twice: " + child);
                }
            }
        }
    }
}
