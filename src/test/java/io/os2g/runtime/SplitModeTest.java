package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.os2g.Errno;
import io.os2g.link.LinkException;
import io.os2g.link.MountSpec;
import io.os2g.link.OpenRequest;
import io.os2g.link.ReadRequest;
import io.os2g.link.SocketLink;
import io.os2g.namespace.InodeTable;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.StagedChunk;
import io.os2g.staging.StagingView;
import io.os2g.store.Listing;
import io.os2g.support.S3Fixture;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent and a shim's link in one JVM, over a real Unix socket and a real S3 server: everything
 * of the split mode but the FUSE mount (the integration suite mounts it).
 */
@Tag("s3")
class SplitModeTest {

    private static final int CHUNK = 256 * 1024;

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private S3Fixture s3;
    private Path socket;
    private Path stagingParent;
    private AgentService server;

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
        socket = tmp.resolve("agent.sock");
        stagingParent = tmp.resolve("staging");
        server = startAgent();
    }

    /** An agent as {@code os2g agent} composes it: 2 s requests, one retry, 8 fetches, writes of every kind allowed. */
    private AgentService startAgent() throws Exception {
        StoreSettings store = TestMounts.store(s3, tmp, 8, 2);
        return AgentService.start(new AgentServiceConfigBuilder("unix:" + socket).store(store).stagingDir(stagingParent)
                .policy(java.util.List.of(), true, true, true).build());
    }

    @AfterEach
    void tearDown() {
        server.close();
    }

    private SocketLink connect(String bucket) {
        return SocketLink.connect(socket, new MountSpec(bucket, "", 4L << 20, CHUNK, 1 << 20, 0, 60, false, false, -1, false), Duration.ofSeconds(10));
    }

    private static byte[] readStaged(StagingView view, long inode, long chunk, String etag) {
        StagedChunk c = view.acquire(new ChunkKey(inode, chunk), etag);
        assertNotNull(c, "chunk " + chunk + " staged and found through the shared table");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment target = arena.allocate(c.length());
            view.copyOut(c, 0, target, 0, c.length());
            return target.toArray(ValueLayout.JAVA_BYTE);
        } finally {
            view.release(c);
        }
    }

    @Test
    void listingsAndBytesComeThroughTheLinkAndTheSharedRegion() throws Exception {
        byte[] body = S3Fixture.bytes(3 * CHUNK + 1000, 7);
        s3.put("data", "dir/big.bin", body).put("data", "top.txt", new byte[] {1, 2, 3});
        try (SocketLink link = connect("data")) {
            Listing root = link.list("");
            assertEquals(1, root.objects().size());
            assertEquals(java.util.List.of("dir/"), root.commonPrefixes());
            var big = link.list("dir/").objects().getFirst();
            long inode = new InodeTable().inodeOf(big.key());
            long handle = link.open(new OpenRequest(inode, big.key(), big.etag(), big.size()));
            link.stage(new ReadRequest(handle, 0, body.length)).get(10, TimeUnit.SECONDS);
            byte[] got = new byte[body.length];
            for (int c = 0; c < 4; c++) {
                byte[] chunk = readStaged(link.staging(), inode, c, big.etag());
                System.arraycopy(chunk, 0, got, c * CHUNK, chunk.length);
            }
            assertArrayEquals(body, got);
            assertTrue(link.agentStats().contains("\"gets\""));
            link.release(handle);
        }
    }

    /**
     * Mounts bucket data through the agent with {@code --agent-replies agentReplies}, reads a 3 MiB file
     * whole and across a chunk boundary (bytes equal), and returns the mount's stats after the reads.
     */
    private java.util.Map<String, Object> readThroughASplitMount(String agentReplies) throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/fuse")) && "root".equals(System.getProperty("user.name")), "needs root and /dev/fuse");
        byte[] body = S3Fixture.bytes(3 * (1 << 20) + 1000, 11);
        s3.put("data", "dir/big.bin", body);
        Path mnt = Files.createDirectory(tmp.resolve("mnt"));
        Gateway gateway = Gateway.open(new MountConfigBuilder("data", mnt.toString()).agent("unix:" + socket, agentReplies)
                .staging(null, "1G", "1M", "256M", 256).build());
        try {
            assertArrayEquals(body, Files.readAllBytes(mnt.resolve("dir/big.bin")));
            try (var channel = java.nio.channels.FileChannel.open(mnt.resolve("dir/big.bin"))) {
                java.nio.ByteBuffer across = java.nio.ByteBuffer.allocate(300_000); // over a chunk boundary
                assertEquals(300_000, channel.read(across, (2 << 20) - 150_000));
                assertArrayEquals(java.util.Arrays.copyOfRange(body, (2 << 20) - 150_000, (2 << 20) + 150_000), across.array());
            }
            java.util.Map<String, Object> stats = io.os2g.metrics.Stats.parse(Files.readString(mnt.resolve(".os2g/stats")));
            assertTrue(((Number) stats.get("bytes_served")).longValue() >= body.length, stats.toString());
            return stats;
        } finally {
            gateway.close();
        }
    }

    @Test
    void aSplitMountsReadsAreAnsweredByTheAgentOnTheLentDeviceWithTheSameBytes() throws Exception {
        java.util.Map<String, Object> stats = readThroughASplitMount("on");
        assertEquals(((Number) stats.get("bytes_served")).longValue(), ((Number) stats.get("bytes_answered_by_agent")).longValue(),
                "every READ answered by the agent");
    }

    @Test
    void withAgentRepliesOffTheShimAnswersEveryReadFromTheSharedRegion() throws Exception {
        java.util.Map<String, Object> stats = readThroughASplitMount("off");
        assertEquals(0L, ((Number) stats.get("bytes_answered_by_agent")).longValue(), "no READ left to the agent");
    }

    @Test
    void statsReadAfterReadsReturnedCountEveryByteTheAgentAnswered() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/fuse")) && "root".equals(System.getProperty("user.name")), "needs root and /dev/fuse");
        int readers = 4;
        int filesEach = 40;
        for (int i = 0; i < readers * filesEach; i++) {
            s3.put("data", "f/" + i, S3Fixture.bytes(1000 + i, i));
        }
        Path mnt = Files.createDirectory(tmp.resolve("mnt"));
        Gateway gateway = Gateway.open(new MountConfigBuilder("data", mnt.toString()).agent("unix:" + socket, "on").build());
        java.util.concurrent.atomic.AtomicLong returned = new java.util.concurrent.atomic.AtomicLong();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(readers)) {
            java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
            for (int r = 0; r < readers; r++) {
                int reader = r;
                done.add(pool.submit(() -> {
                    for (int i = reader; i < readers * filesEach; i += readers) {
                        // each a first read: the agent answers it from the thread that completed its fetch
                        returned.addAndGet(Files.readAllBytes(mnt.resolve("f/" + i)).length);
                        long before = returned.get();
                        java.util.Map<String, Object> stats = io.os2g.metrics.Stats.parse(Files.readString(mnt.resolve(".os2g/stats")));
                        long counted = ((Number) stats.get("bytes_answered_by_agent")).longValue();
                        assertTrue(counted >= before, "stats after " + before + " bytes were read said " + counted);
                    }
                    return null;
                }));
            }
            for (var f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            gateway.close();
        }
    }

    @Test
    void aMountOfAMissingBucketIsRefusedWithTheAgentsReason() {
        LinkException e = assertThrows(LinkException.class, () -> connect("no-such-bucket"));
        assertTrue(e.getMessage().contains("refused the mount") && e.getMessage().contains("does not exist"), e.getMessage());
    }

    @Test
    void aShimOfAnotherProtocolVersionIsRefusedSayingSo() throws Exception {
        try (var channel = java.nio.channels.SocketChannel.open(java.net.UnixDomainSocketAddress.of(socket))) {
            var out = java.nio.channels.Channels.newOutputStream(channel);
            var in = java.nio.channels.Channels.newInputStream(channel);
            // a hello as the wire writes it: length, type 1, id, magic, version
            var frame = java.nio.ByteBuffer.allocate(4 + 1 + 8 + 4 + 4);
            frame.putInt(1 + 8 + 4 + 4).put((byte) 1).putLong(0).putInt(0x4f533247).putInt(99);
            out.write(frame.array());
            var reply = new java.io.DataInputStream(in);
            int length = reply.readInt();
            byte[] rest = reply.readNBytes(length);
            assertEquals(3, rest[0], "a refusal");
            String reason = new String(rest, 1 + 8 + 4, rest.length - 13, java.nio.charset.StandardCharsets.UTF_8);
            assertTrue(reason.contains("version") && reason.contains("99"), reason);
        }
    }

    @Test
    void noAgentIsOneClearError() {
        server.close();
        LinkException e = assertThrows(LinkException.class, () -> connect("data"));
        assertTrue(e.getMessage().contains("no agent at unix:" + socket), e.getMessage());
    }

    @Test
    void agentGoneFailsReadsAtOnceAndAfterItsRestartTheSameHandleReadsAgain() throws Exception {
        byte[] body = S3Fixture.bytes(CHUNK, 3);
        s3.put("data", "a.bin", body);
        try (SocketLink link = connect("data")) {
            var a = link.list("").objects().getFirst();
            long inode = new InodeTable().inodeOf(a.key());
            long handle = link.open(new OpenRequest(inode, a.key(), a.etag(), a.size()));
            link.stage(new ReadRequest(handle, 0, 10)).get(10, TimeUnit.SECONDS);

            server.close(); // as if killed: the socket closes under the link
            long t0 = System.nanoTime();
            ExecutionException e = assertThrows(ExecutionException.class, () -> {
                for (int i = 0; i < 100; i++) { // until the link has noticed the hang-up
                    link.stage(new ReadRequest(handle, 0, 10)).get(10, TimeUnit.SECONDS);
                    Thread.sleep(20);
                }
            });
            assertEquals(Errno.EIO, assertInstanceOf(LinkException.class, e.getCause()).errno());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "fails fast, never hangs");
            assertThrows(LinkException.class, link::staging);

            server = startAgent();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                try {
                    link.stage(new ReadRequest(handle, 0, body.length)).get(10, TimeUnit.SECONDS);
                    break;
                } catch (ExecutionException notYet) {
                    assertTrue(System.nanoTime() < deadline, "the link did not come back: " + notYet.getCause());
                    Thread.sleep(100);
                }
            }
            assertArrayEquals(body, readStaged(link.staging(), inode, 0, a.etag()));
        }
    }

    @Test
    void theAgentFreesAShimsRegionWhenTheShimGoes() throws Exception {
        SocketLink link = connect("data");
        Path region;
        try (var dirs = Files.list(stagingParent)) {
            region = dirs.filter(Files::isDirectory).findFirst().orElseThrow();
        }
        assertTrue(Files.exists(region.resolve("segment-0000")));
        link.close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (Files.exists(region)) {
            assertTrue(System.nanoTime() < deadline, "region of a gone shim still there: " + region);
            Thread.sleep(20);
        }
        assertFalse(Files.exists(region));
    }
}
