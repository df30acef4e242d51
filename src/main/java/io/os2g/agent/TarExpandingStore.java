package io.os2g.agent;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.os2g.codec.RangeSource;
import io.os2g.codec.TarIndex;
import io.os2g.store.Listing;
import io.os2g.store.ObjectStore;
import io.os2g.store.ObjectSummary;
import io.os2g.store.StoreException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bucket with each {@code NAME.tar} object also shown as a directory {@code NAME.tar.d/} of its members
 * ({@code --expand-tar}). Everything above sees members as ordinary objects with keys
 * {@code NAME.tar.d/MEMBER}: the namespace lists them, the agent fetches and stages them by inode like any
 * file, hints and warm name them by path. A read of a member is a ranged GET of its bytes in the tar,
 * pinned to the tar's ETag.
 *
 * <p>A tar's index comes from its sidecar {@code NAME.tar.idx} when one is listed beside it and describes
 * this version of the tar, otherwise from its member headers ({@link TarIndex#fromHeaders}); it is cached
 * per key, size and ETag, so a new version of the tar is indexed again.
 */
public final class TarExpandingStore implements ObjectStore {

    private static final Logger LOG = LoggerFactory.getLogger(TarExpandingStore.class);

    static final String TAR = ".tar";
    static final String EXPANDED = ".tar.d/";
    static final String SIDECAR = ".tar.idx";
    /** Members kept indexed across all cached tars (an index costs about 150 bytes per member). */
    private static final long MAX_INDEXED_MEMBERS = 2_000_000;
    private static final long MAX_SHARDS_REMEMBERED = 1_000_000;
    private static final long MAX_SIDECAR_BYTES = 256L << 20;

    /** A tar as its listing showed it, and the sidecar index listed beside it, if any. */
    private record Shard(ObjectSummary tar, ObjectSummary sidecar) {
        String cacheKey() {
            return tar.key() + '\n' + tar.size() + '\n' + tar.etag();
        }
    }

    /** Where a member's bytes lie: in object {@code container}, from byte {@code offset}. */
    record Placement(String container, long offset) {
    }

    /** Where a key falls: in tar {@code tarKey}, at member path {@code member} ("" for the top). */
    private record Location(String tarKey, String member) {
    }

    private final ObjectStore store;
    private final Cache<String, Shard> shards = Caffeine.newBuilder().maximumSize(MAX_SHARDS_REMEMBERED).build();
    private final Cache<String, TarIndex> indexes = Caffeine.newBuilder()
            .maximumWeight(MAX_INDEXED_MEMBERS)
            .weigher((String key, TarIndex index) -> index.fileCount() + 1)
            .build();
    /** Keys that looked like tars but were not listed as objects: a prefix of the bucket that ends in .tar.d/. */
    private final Cache<String, Boolean> notTars = Caffeine.newBuilder()
            .maximumSize(10_000).expireAfterWrite(java.time.Duration.ofMinutes(1)).build();
    private final Set<String> warned = ConcurrentHashMap.newKeySet();
    private final LongAdder indexedFromHeaders = new LongAdder();
    private final LongAdder indexedFromSidecar = new LongAdder();
    private final LongAdder corrupt = new LongAdder();
    private final LongAdder membersSkipped = new LongAdder();

    public TarExpandingStore(ObjectStore store) {
        this.store = store;
    }

    /** Counters for the stats: tars indexed (from headers, from sidecars), corrupt ones, members skipped. */
    public Map<String, Object> stats() {
        return Map.of(
                "indexed_from_headers", indexedFromHeaders.sum(),
                "indexed_from_sidecar", indexedFromSidecar.sum(),
                "corrupt", corrupt.sum(),
                "members_skipped", membersSkipped.sum(),
                "cached_members", indexes.asMap().values().stream().mapToLong(TarIndex::fileCount).sum());
    }

    @Override
    public Listing list(String prefix) {
        Location location = locate(prefix);
        Shard shard = location == null ? null : shard(location.tarKey());
        if (shard == null) {
            return withExpansions(prefix, store.list(prefix));
        }
        TarIndex.Level level = index(shard).level(location.member());
        if (level == null) {
            return new Listing(prefix, List.of(), List.of());
        }
        List<ObjectSummary> objects = new ArrayList<>(level.files().size());
        level.files().forEach((name, member) -> objects.add(
                new ObjectSummary(prefix + name, member.size(), shard.tar().etag(), member.mtimeMillis())));
        List<String> directories = new ArrayList<>(level.directories().size());
        for (String name : level.directories()) {
            directories.add(prefix + name + "/");
        }
        return new Listing(prefix, objects, directories);
    }

    /** The listing plus a directory {@code NAME.tar.d/} for each {@code NAME.tar}; remembers the tars and their sidecars. */
    private Listing withExpansions(String prefix, Listing listing) {
        Map<String, ObjectSummary> sidecars = new java.util.HashMap<>();
        for (ObjectSummary object : listing.objects()) {
            if (object.key().endsWith(SIDECAR)) {
                sidecars.put(object.key().substring(0, object.key().length() - ".idx".length()), object);
            }
        }
        Set<String> directories = new LinkedHashSet<>(listing.commonPrefixes());
        for (ObjectSummary object : listing.objects()) {
            if (object.key().endsWith(TAR) && object.key().length() - prefix.length() > TAR.length()) {
                String expanded = object.key() + ".d/";
                if (!directories.add(expanded) && warned.add(expanded)) {
                    LOG.warn("the keys under '{}' are hidden by the members of '{}' (--expand-tar)", expanded, object.key());
                }
                shards.put(object.key(), new Shard(object, sidecars.get(object.key())));
            }
        }
        return directories.size() == listing.commonPrefixes().size() ? listing
                : new Listing(listing.prefix(), listing.objects(), List.copyOf(directories));
    }

    @Override
    public void get(String key, long offset, long length, String etag, BodyReader reader) {
        Location location = locate(key);
        Shard shard = location == null ? null : shard(location.tarKey());
        if (shard == null) {
            store.get(key, offset, length, etag, reader);
            return;
        }
        TarIndex.Member member = index(shard).file(location.member());
        if (member == null) {
            throw new StoreException(StoreException.Kind.NOT_FOUND, "no member " + location.member() + " in " + shard.tar().key(), null);
        }
        if (member.truncated()) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "member " + member.path() + " of " + shard.tar().key()
                    + " runs past the end of the tar (" + shard.tar().size() + " bytes): truncated", null);
        }
        if (offset < 0 || offset + length > member.size()) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "read [" + offset + ", +" + length + ") outside member "
                    + member.path() + " of " + member.size() + " bytes in " + shard.tar().key(), null);
        }
        store.get(shard.tar().key(), member.dataOffset() + offset, length, etag, reader);
    }

    /**
     * Where the bytes of member {@code key} lie in its tar, if its tar is indexed already (this never
     * lists or indexes); null for a key that is not a readable member.
     */
    Placement placement(String key) {
        Location location = locate(key);
        Shard shard = location == null ? null : shards.getIfPresent(location.tarKey());
        TarIndex index = shard == null ? null : indexes.getIfPresent(shard.cacheKey());
        TarIndex.Member member = index == null ? null : index.file(location.member());
        return member == null || member.truncated() ? null : new Placement(shard.tar().key(), member.dataOffset());
    }

    /** The tar and member path of {@code key}, or null when no component of it ends in {@code .tar.d}. */
    private static Location locate(String key) {
        int at = key.indexOf(EXPANDED);
        while (at >= 0) {
            if (at > 0 && key.charAt(at - 1) != '/') {
                return new Location(key.substring(0, at + TAR.length()), key.substring(at + EXPANDED.length()));
            }
            at = key.indexOf(EXPANDED, at + 1);
        }
        return null;
    }

    /** The tar behind {@code tarKey} as listed, listing its parent if this store has not seen it; null if there is none. */
    private Shard shard(String tarKey) {
        Shard shard = shards.getIfPresent(tarKey);
        if (shard == null && notTars.getIfPresent(tarKey) == null) {
            int slash = tarKey.lastIndexOf('/');
            withExpansions(tarKey.substring(0, slash + 1), store.list(tarKey.substring(0, slash + 1)));
            shard = shards.getIfPresent(tarKey);
            if (shard == null) {
                notTars.put(tarKey, Boolean.TRUE);
            }
        }
        return shard;
    }

    private TarIndex index(Shard shard) {
        return indexes.get(shard.cacheKey(), k -> build(shard));
    }

    private TarIndex build(Shard shard) {
        ObjectSummary tar = shard.tar();
        if (shard.sidecar() != null) {
            try {
                TarIndex index = readSidecar(shard.sidecar(), tar);
                indexedFromSidecar.increment();
                membersSkipped.add(index.skipped());
                return index;
            } catch (IOException | StoreException e) {
                if (warned.add(shard.sidecar().key() + '\n' + shard.sidecar().etag())) {
                    LOG.warn("ignoring sidecar index '{}' ({}); indexing '{}' from its headers",
                            shard.sidecar().key(), e.getMessage(), tar.key());
                }
            }
        }
        RangeSource source = StoreRangeSource.of(store, tar.key(), tar.etag());
        TarIndex index;
        try {
            index = TarIndex.fromHeaders(source, tar.size());
        } catch (IOException e) {
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "indexing " + tar.key() + ": " + e.getMessage(), e);
        }
        indexedFromHeaders.increment();
        membersSkipped.add(index.skipped());
        if (index.problem() != null) {
            corrupt.increment();
            LOG.warn("tar '{}' is corrupt ({}): its members from there on are not shown", tar.key(), index.problem());
        }
        return index;
    }

    private TarIndex readSidecar(ObjectSummary sidecar, ObjectSummary tar) throws IOException {
        if (sidecar.size() == 0 || sidecar.size() > MAX_SIDECAR_BYTES) {
            throw new IOException(sidecar.size() + " bytes");
        }
        byte[] text = new byte[(int) sidecar.size()];
        StoreRangeSource.of(store, sidecar.key(), sidecar.etag()).read(0, text, 0, text.length);
        return TarIndex.readSidecar(new java.io.ByteArrayInputStream(text), tar.size(), tar.etag());
    }

    @Override
    public void probe(String prefix) {
        store.probe(prefix);
    }

    @Override
    public String bucket() {
        return store.bucket();
    }

    @Override
    public void close() {
        store.close();
    }
}
