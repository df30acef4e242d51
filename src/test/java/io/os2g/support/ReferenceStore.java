package io.os2g.support;

import io.os2g.store.Listing;
import io.os2g.store.ObjectStore;
import io.os2g.store.ObjectSummary;
import io.os2g.store.StoreException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A bucket as a sorted map, with S3's delimiter semantics: the reference model for unit tests of the
 * namespace and the agent (the real S3 wire protocol is tested against S3Proxy).
 */
public final class ReferenceStore implements ObjectStore {

    private final TreeMap<String, byte[]> objects = new TreeMap<>();
    private final Map<String, Integer> versions = new TreeMap<>();
    public final AtomicInteger lists = new AtomicInteger();
    public final AtomicInteger gets = new AtomicInteger();
    /** Keys in the order their GETs began. */
    public final List<String> getOrder = java.util.Collections.synchronizedList(new ArrayList<>());

    public synchronized ReferenceStore put(String key, byte[] body) {
        objects.put(key, body);
        versions.merge(key, 1, Integer::sum);
        return this;
    }

    public ReferenceStore put(String key, int size) {
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) (key.hashCode() * 31 + i * 7);
        }
        return put(key, body);
    }

    public synchronized String etag(String key) {
        return "v" + versions.get(key) + "-" + Arrays.hashCode(objects.get(key));
    }

    @Override
    public synchronized Listing list(String prefix) {
        lists.incrementAndGet();
        List<ObjectSummary> found = new ArrayList<>();
        TreeSet<String> prefixes = new TreeSet<>();
        for (Map.Entry<String, byte[]> e : objects.tailMap(prefix, true).entrySet()) {
            String key = e.getKey();
            if (!key.startsWith(prefix)) {
                break;
            }
            int slash = key.indexOf('/', prefix.length());
            if (slash >= 0) {
                prefixes.add(key.substring(0, slash + 1));
            } else {
                found.add(new ObjectSummary(key, e.getValue().length, etag(key), 1_700_000_000_000L));
            }
        }
        return new Listing(prefix, found, new ArrayList<>(prefixes));
    }

    @Override
    public void get(String key, long offset, long length, String etag, BodyReader reader) {
        byte[] body;
        synchronized (this) {
            gets.incrementAndGet();
            getOrder.add(key);
            body = objects.get(key);
            if (body == null) {
                throw new StoreException(StoreException.Kind.NOT_FOUND, "no such key: " + key, null);
            }
            if (!etag(key).equals(etag)) {
                throw new StoreException(StoreException.Kind.CHANGED, "etag mismatch: " + key, null);
            }
        }
        try {
            reader.read(new ByteArrayInputStream(body, (int) offset, (int) length));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void probe(String prefix) {
    }

    @Override
    public String bucket() {
        return "reference";
    }

    @Override
    public void close() {
    }
}
