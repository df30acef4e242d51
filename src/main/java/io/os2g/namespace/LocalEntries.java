package io.os2g.namespace;

import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * What this mount changed that its cached listings may not show yet: files being written or just
 * published, directories made here, keys deleted here. Each entry stands over the listing of its
 * directory; a published or deleted one only until a listing made after it would show the change
 * (the metadata TTL), a file being written or a directory made here until it is taken back.
 */
final class LocalEntries {

    /** An entry and until when it stands ({@link Long#MAX_VALUE}: until taken back). A null node: deleted. */
    private record Local(Node node, long untilNanos) {
    }

    private final ConcurrentHashMap<String, ConcurrentHashMap<String, Local>> byDirectory = new ConcurrentHashMap<>();
    private final long ttlNanos;
    private final LongSupplier clock;

    /** @param ttlNanos how long a published or deleted entry stands; -1 for forever */
    LocalEntries(long ttlNanos, LongSupplier clock) {
        this.ttlNanos = ttlNanos;
        this.clock = clock;
    }

    /** {@code node} is {@code name} in the directory at {@code prefix} until {@link #remove}d. */
    void hold(String prefix, String name, Node node) {
        put(prefix, name, new Local(node, Long.MAX_VALUE));
    }

    /** {@code node} is {@code name} until listings show it (published), or {@code name} is gone (node null: deleted). */
    void settle(String prefix, String name, Node node) {
        put(prefix, name, new Local(node, ttlNanos < 0 ? Long.MAX_VALUE : clock.getAsLong() + ttlNanos));
    }

    private void put(String prefix, String name, Local local) {
        byDirectory.computeIfAbsent(prefix, p -> new ConcurrentHashMap<>()).put(name, local);
    }

    /** Takes back whatever stands for {@code name}: the listing speaks for it again. */
    void remove(String prefix, String name) {
        byDirectory.computeIfPresent(prefix, (p, entries) -> {
            entries.remove(name);
            return entries.isEmpty() ? null : entries;
        });
    }

    /** What stands for {@code name}: null for nothing (ask the listing), else the entry ({@link #DELETED} for none). */
    Node lookup(String prefix, String name) {
        Map<String, Local> entries = byDirectory.get(prefix);
        Local local = entries == null ? null : entries.get(name);
        if (local == null || expired(local)) {
            return null;
        }
        return local.node() == null ? DELETED : local.node();
    }

    /** {@code listed} with what stands over it; the same map when nothing does. */
    NavigableMap<String, Node> merge(String prefix, NavigableMap<String, Node> listed) {
        Map<String, Local> entries = byDirectory.get(prefix);
        if (entries == null || entries.isEmpty()) {
            return listed;
        }
        TreeMap<String, Node> merged = new TreeMap<>(listed);
        entries.forEach((name, local) -> {
            if (expired(local)) {
                entries.remove(name, local);
            } else if (local.node() == null) {
                merged.remove(name);
            } else {
                merged.put(name, local.node());
            }
        });
        return merged;
    }

    private boolean expired(Local local) {
        return local.untilNanos() != Long.MAX_VALUE && clock.getAsLong() - local.untilNanos() > 0;
    }

    /** Stands for a deleted name in {@link #lookup}. */
    static final Node DELETED = new Node.Dir(-1, "");
}
