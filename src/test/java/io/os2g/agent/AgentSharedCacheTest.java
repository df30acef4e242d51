package io.os2g.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.minio.ListObjectsArgs;
import io.minio.Result;
import io.minio.messages.Item;
import io.os2g.diskcache.BlockKey;
import io.os2g.diskcache.BlockSigner;
import io.os2g.namespace.Namespace;
import io.os2g.namespace.Node;
import io.os2g.sharedcache.SharedCache;
import io.os2g.staging.ExtentIndex;
import io.os2g.staging.StagingConfig;
import io.os2g.staging.StagingRegion;
import io.os2g.store.Credentials;
import io.os2g.store.MinioObjectStore;
import io.os2g.store.RetryPolicy;
import io.os2g.store.StoreConfig;
import io.os2g.store.Tls;
import io.os2g.support.S3Fixture;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two "nodes" (agents with staging regions of their own, no disk cache) over one origin bucket and one
 * cache bucket on S3Proxy: what one fetched the other reads from the shared tier; bad blocks, changed
 * objects and a tier that does not answer never give wrong bytes.
 */
@Tag("s3")
class AgentSharedCacheTest {

    private static final int CHUNK = 256 * 1024;
    /** The origin as the nodes' blocks name it. */
    private static final String SCOPE = "http://s3proxy data";

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private S3Fixture s3;
    private final List<AutoCloseable> closing = new ArrayList<>();
    private int nodes;

    private record ClusterNode(MinioObjectStore origin, ExtentIndex index, Agent agent, SharedCache tier) {
    }

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data").bucket("cache");
    }

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            c.close();
        }
    }

    private ClusterNode node() {
        return node(new SharedCache(s3.store("cache"), "train/", null));
    }

    private ClusterNode node(SharedCache tier) {
        MinioObjectStore origin = s3.store("data");
        StagingRegion region = StagingRegion.create(StagingConfig.of(tmp.resolve("node" + nodes++), 4L << 20, Duration.ofSeconds(5)));
        ExtentIndex index = new ExtentIndex(region, CHUNK);
        Namespace namespace = new Namespace(origin, "", Duration.ofMinutes(5));
        Agent agent = new Agent(origin, index, new AgentConfig(CHUNK, 64 * 1024, 1 << 20, 8, 0), namespace, null, tier, SCOPE);
        closing.add(origin);
        closing.add(region);
        closing.add(namespace::close);
        closing.add(tier);
        closing.add(agent);
        return new ClusterNode(origin, index, agent, tier);
    }

    private static Node.File file(ClusterNode n, String key, int inode) {
        var o = n.origin().list(key.substring(0, key.lastIndexOf('/') + 1)).objects().stream().filter(x -> x.key().equals(key))
                .findFirst().orElseThrow();
        return new Node.File(inode, key, o.size(), o.etag(), o.lastModifiedMillis());
    }

    private static byte[] read(ClusterNode n, Node.File f) throws Exception {
        return StagedReads.read(n.agent(), n.index(), f, CHUNK);
    }

    /** The cache bucket's block objects, once the writers behind the reads have put {@code expected} of them. */
    private List<String> blocks(int expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            List<String> names = new ArrayList<>();
            for (Result<Item> r : s3.client().listObjects(ListObjectsArgs.builder().bucket("cache").prefix("train/").recursive(true).build())) {
                String name = r.get().objectName();
                if (name.matches(".*/[0-9a-f]{64}")) { // the filesystem backend lists directories and files being written too
                    names.add(name);
                }
            }
            if (names.size() >= expected || System.nanoTime() > deadline) {
                return names;
            }
            Thread.sleep(50);
        }
    }

    @Test
    void aSecondNodeReadsWhatTheFirstFetchedFromTheSharedTierWithNoOriginGet() throws Exception {
        byte[] data = S3Fixture.bytes(3 * CHUNK + 1000, 1);
        s3.put("data", "d/a.bin", data);
        ClusterNode first = node();
        assertArrayEquals(data, read(first, file(first, "d/a.bin", 2)));
        assertEquals(4, first.origin().getCount());
        assertEquals(4, blocks(4).size(), "each chunk written behind the read, under the prefix");
        assertEquals(4, first.tier().counters().writes());

        ClusterNode second = node();
        assertArrayEquals(data, read(second, file(second, "d/a.bin", 2)));
        assertEquals(0, second.origin().getCount(), "every chunk from the shared tier");
        assertEquals(4, second.tier().counters().hits());
        assertEquals(0, second.tier().counters().writes(), "nothing written back that came from the tier");
    }

    @Test
    void aBadOrTruncatedBlockIsCountedAndTheChunkReadFromTheOriginThenRewritten() throws Exception {
        byte[] data = S3Fixture.bytes(2 * CHUNK, 3);
        s3.put("data", "d/b.bin", data);
        ClusterNode first = node();
        read(first, file(first, "d/b.bin", 2));
        List<String> names = blocks(2);
        assertEquals(2, names.size());
        byte[] flipped = s3.get("cache", names.get(0));
        flipped[flipped.length - 7] ^= 1;
        s3.put("cache", names.get(0), flipped);
        byte[] whole = s3.get("cache", names.get(1));
        s3.put("cache", names.get(1), java.util.Arrays.copyOf(whole, whole.length / 2));

        ClusterNode second = node();
        assertArrayEquals(data, read(second, file(second, "d/b.bin", 2)), "never the bad bytes");
        assertEquals(2, second.tier().counters().badBlocks());
        assertEquals(2, second.origin().getCount(), "both chunks from the origin");
        assertEquals(0, second.tier().counters().errors(), "a bad block is not a failing tier");
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (second.tier().counters().writes() < 2 && System.nanoTime() < until) {
            Thread.sleep(50);
        }
        ClusterNode third = node();
        assertArrayEquals(data, read(third, file(third, "d/b.bin", 2)));
        assertEquals(0, third.origin().getCount(), "the origin's copies replaced the bad blocks");
    }

    @Test
    void aBlockCopiedUnderAnotherBlocksNameIsNotServed() throws Exception {
        byte[] a = S3Fixture.bytes(CHUNK / 2, 4);
        byte[] b = S3Fixture.bytes(CHUNK / 2, 5);
        s3.put("data", "d/a.bin", a).put("data", "d/b.bin", b);
        ClusterNode first = node();
        read(first, file(first, "d/a.bin", 2));
        read(first, file(first, "d/b.bin", 3));
        List<String> names = blocks(2);
        s3.put("cache", names.get(1), s3.get("cache", names.get(0)));

        ClusterNode second = node();
        assertArrayEquals(a, read(second, file(second, "d/a.bin", 2)));
        assertArrayEquals(b, read(second, file(second, "d/b.bin", 3)));
        assertEquals(1, second.tier().counters().badBlocks(), second.tier().counters() + " " + names);
        assertEquals(1, second.origin().getCount());
    }

    @Test
    void aSignedTierServesOnlyBlocksSignedWithTheClustersSecret() throws Exception {
        byte[] data = S3Fixture.bytes(2 * CHUNK + 17, 10);
        s3.put("data", "d/s.bin", data);
        byte[] secret = S3Fixture.bytes(32, 11);
        ClusterNode first = node(new SharedCache(s3.store("cache"), "train/", BlockSigner.of(secret)));
        read(first, file(first, "d/s.bin", 2));
        blocks(3);
        ClusterNode second = node(new SharedCache(s3.store("cache"), "train/", BlockSigner.of(secret)));
        assertArrayEquals(data, read(second, file(second, "d/s.bin", 2)));
        assertEquals(0, second.origin().getCount(), "signed with the same secret: served");

        ClusterNode stranger = node(new SharedCache(s3.store("cache"), "train/", BlockSigner.of(S3Fixture.bytes(32, 12))));
        assertArrayEquals(data, read(stranger, file(stranger, "d/s.bin", 2)));
        assertEquals(3, stranger.tier().counters().badBlocks(), "another secret's blocks are not this node's");
        // a writer without the secret puts checksummed blocks in their place: a signing node refuses them
        ClusterNode unsigned = node();
        read(unsigned, file(unsigned, "d/s.bin", 2));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (unsigned.tier().counters().writes() < 3 && System.nanoTime() < until) {
            Thread.sleep(50);
        }
        ClusterNode signing = node(new SharedCache(s3.store("cache"), "train/", BlockSigner.of(secret)));
        assertArrayEquals(data, read(signing, file(signing, "d/s.bin", 2)));
        assertEquals(3, signing.tier().counters().badBlocks());
        assertEquals(3, signing.origin().getCount());
    }

    @Test
    void aChangedObjectIsReadNewOnEveryNode() throws Exception {
        s3.put("data", "d/v.bin", S3Fixture.bytes(CHUNK + 5, 6));
        ClusterNode first = node();
        read(first, file(first, "d/v.bin", 2));
        blocks(2);
        byte[] changed = S3Fixture.bytes(CHUNK + 5, 7);
        s3.put("data", "d/v.bin", changed);

        ClusterNode second = node();
        assertArrayEquals(changed, read(second, file(second, "d/v.bin", 2)));
        assertEquals(2, second.origin().getCount(), "a new ETag names other blocks");
    }

    @Test
    void aNodeThatMissesABlockAnotherNodeIsFillingWaitsForItRatherThanTheOrigin() throws Exception {
        byte[] h = S3Fixture.bytes(CHUNK / 2, 13);
        byte[] k = S3Fixture.bytes(CHUNK / 3, 14);
        s3.put("data", "d/h.bin", h).put("data", "d/k.bin", k);
        SharedCache filler = new SharedCache(s3.store("cache"), "train/", null);
        closing.add(filler);
        ClusterNode reader = node();
        Node.File hFile = file(reader, "d/h.bin", 2);
        BlockKey hBlock = new BlockKey(SCOPE, hFile.key(), hFile.etag(), 0, hFile.size());
        assertFalse(filler.read(hBlock, in -> fail("nothing in the tier yet")), "a miss: the filler claims the block");
        // the filler's origin GET ends and its block is written while the reader waits
        Thread fill = Thread.ofPlatform().start(() -> {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
            filler.admit(hBlock, target -> {
                target.put(h);
                return true;
            });
        });
        assertArrayEquals(h, read(reader, hFile));
        fill.join();
        assertEquals(0, reader.origin().getCount(), "the block the other node fetched, no GET of its own");
        assertEquals(1, reader.tier().counters().awaitedFills());
        assertEquals(1, reader.tier().counters().awaitedFillHits());

        // a claim whose block never comes (its node went away): the wait ends, the reader fetches and writes it
        Node.File kFile = file(reader, "d/k.bin", 3);
        assertFalse(filler.read(new BlockKey(SCOPE, kFile.key(), kFile.etag(), 0, kFile.size()), in -> fail("not there")));
        assertArrayEquals(k, read(reader, kFile));
        assertEquals(1, reader.origin().getCount());
        assertEquals(2, reader.tier().counters().awaitedFills());
        assertEquals(1, reader.tier().counters().awaitedFillHits());
        blocks(2);
        ClusterNode next = node();
        assertArrayEquals(k, read(next, file(next, "d/k.bin", 3)));
        assertEquals(0, next.origin().getCount(), "written by the node that waited in vain");
        assertEquals(0, next.tier().counters().awaitedFills(), "a hit waits for nothing");

        assertEquals(2, SharedCache.clear(s3.store("cache"), "train/"));
        assertTrue(blocksAndMarkers().isEmpty(), "clear removes the fill markers too: " + blocksAndMarkers());
    }

    private List<String> blocksAndMarkers() throws Exception {
        List<String> names = new ArrayList<>();
        for (Result<Item> r : s3.client().listObjects(ListObjectsArgs.builder().bucket("cache").prefix("train/").recursive(true).build())) {
            if (r.get().objectName().matches(".*/[0-9a-f]{64}(\\.filling)?")) {
                names.add(r.get().objectName());
            }
        }
        return names;
    }

    @Test
    void aTierThatDoesNotAnswerIsBypassedAndReadsGoOnFromTheOrigin() throws Exception {
        byte[] data = S3Fixture.bytes(2 * CHUNK + 3, 8);
        s3.put("data", "d/c.bin", data);
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        StoreConfig nowhere = new StoreConfig(URI.create("http://127.0.0.1:" + closedPort), "us-east-1", true, "cache",
                new Credentials(S3Fixture.ACCESS_KEY, S3Fixture.SECRET_KEY, null), false,
                new RetryPolicy(1, Duration.ofMillis(10), Duration.ofMillis(10), Duration.ofSeconds(2)), 4, Tls.SYSTEM);
        s3.put("data", "d/e.bin", S3Fixture.bytes(CHUNK, 9));
        ClusterNode n = node(new SharedCache(new MinioObjectStore(nowhere), "", null));
        long started = System.nanoTime();
        assertArrayEquals(data, read(n, file(n, "d/c.bin", 2)));
        assertTrue(System.nanoTime() - started < TimeUnit.SECONDS.toNanos(20), "no read waits out a dead tier");
        SharedCache.Counters c = n.tier().counters();
        assertTrue(c.errors() >= 1 && c.bypassed(), "failed, then left alone");
        assertEquals(3, n.origin().getCount());
        assertEquals(3, c.writeDrops(), "nothing written to a tier being bypassed");
        read(n, file(n, "d/e.bin", 3));
        assertEquals(c.errors(), n.tier().counters().errors(), "not asked again while bypassed");
    }
}
