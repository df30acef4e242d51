package io.os2g.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
 * reaches exactly the keys whose every segment is a valid name and that no directory hides, each by
 * exactly one path, and never crashes.
 */
@Tag("unit")
class NamespaceModelTest {

    private static final String[] ATOMS = {"a", "b", "c", ".", "..", "", "d e", "ü", "x.jpg"};

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
        int count = 1 + random.nextInt(40);
        for (int i = 0; i < count; i++) {
            int depth = 1 + random.nextInt(4);
            StringBuilder key = new StringBuilder();
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

        Map<String, Long> expected = new TreeMap<>();
        for (String key : keys) {
            if (visible(key, keys)) {
                expected.put(key, (long) key.length());
            }
        }
        Namespace ns = new Namespace(store, "", Duration.ofMinutes(1));
        Map<String, Long> walked = new TreeMap<>();
        walk(ns, ns.root(), "", walked);
        assertEquals(expected, walked, "keys: " + keys);
        for (String path : walked.keySet()) {
            assertEquals(path, ((Node.File) ns.resolve("/" + path)).key());
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
