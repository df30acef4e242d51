package io.os2g.namespace;

import java.util.Collections;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

/** One listed directory: its entries by name, in name order (readdir order). */
public record Directory(Node.Dir self, NavigableMap<String, Node> entries, AtomicBoolean subdirectoriesRequested) {

    public Directory {
        entries = Collections.unmodifiableNavigableMap(new TreeMap<>(entries));
    }

    public Directory(Node.Dir self, NavigableMap<String, Node> entries) {
        this(self, entries, new AtomicBoolean());
    }

    public Node entry(String name) {
        return entries.get(name);
    }

    /** Number of sub-directories, for {@code st_nlink} (2 + sub-directories, as ext4 reports). */
    public int subdirectoryCount() {
        int n = 0;
        for (Map.Entry<String, Node> e : entries.entrySet()) {
            if (e.getValue() instanceof Node.Dir) {
                n++;
            }
        }
        return n;
    }
}
