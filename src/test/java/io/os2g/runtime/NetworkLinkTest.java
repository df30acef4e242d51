package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.os2g.link.LinkAddress;
import io.os2g.link.LinkException;
import io.os2g.link.LinkTls;
import io.os2g.link.MountSpec;
import io.os2g.link.OpenRequest;
import io.os2g.link.ReadRequest;
import io.os2g.link.SocketLink;
import io.os2g.namespace.InodeTable;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.Restaging;
import io.os2g.staging.StagingView;
import io.os2g.store.ObjectSummary;
import io.os2g.support.LinkCerts;
import io.os2g.support.S3Fixture;
import io.os2g.support.StagedBytes;
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
 * The agent behind a TCP port with mutual TLS, and a shim's link to it with a staging region of its own
 * that the agent posts chunks into: a real S3 server, real TLS, loopback TCP. The namespaces of two
 * machines are the integration suite's.
 */
@Tag("s3")
class NetworkLinkTest {

    private static final int CHUNK = 256 * 1024;

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private S3Fixture s3;
    private LinkCerts agentCerts;
    private LinkCerts shimCerts;
    private AgentService agent;
    private int port;

    @BeforeEach
    void setUp() throws Exception {
        s3 = new S3Fixture(proxy).bucket("data");
        Path certs = Files.createDirectory(tmp.resolve("certs"));
        agentCerts = LinkCerts.issue(certs, "link-ca", "agent");
        shimCerts = LinkCerts.issue(certs, "link-ca", "shim");
        agent = startAgent(0, "on");
        port = agent.linkPort();
    }

    @AfterEach
    void tearDown() {
        agent.close();
    }

    private AgentService startAgent(int onPort, String encryption) throws Exception {
        StoreSettings store = TestMounts.store(s3, tmp, 8, 2);
        return AgentService.start(new AgentServiceConfigBuilder("tcp://127.0.0.1:" + onPort).store(store)
                .stagingDir(tmp.resolve("agent-staging")).policy(java.util.List.of(), true, true, true)
                .link(agentCerts.cert(), agentCerts.key(), agentCerts.ca(), encryption).build());
    }

    private SocketLink connect(LinkCerts certs, long staging) {
        return connect(certs, staging, true);
    }

    private SocketLink connect(LinkCerts certs, long staging, boolean encrypt) {
        return SocketLink.connect(new LinkAddress.Tcp("127.0.0.1", port), LinkTls.load(certs.cert(), certs.key(), certs.ca(), encrypt),
                tmp.resolve("host-staging"), null, new MountSpec("data", "", staging, CHUNK, 1 << 20, 0, 60, false, false, -1, false),
                Duration.ofSeconds(10));
    }

    private static byte[] readStaged(StagingView view, long inode, long chunk, String etag) {
        byte[] bytes = StagedBytes.read(view, new ChunkKey(inode, chunk), etag);
        assertNotNull(bytes, "chunk " + chunk + " posted into the host's region");
        return bytes;
    }

    /** Stages all of {@code object} through the link and returns what the host's region holds of it. */
    private static byte[] stageWhole(SocketLink link, ObjectSummary object) throws Exception {
        long inode = new InodeTable().inodeOf(object.key());
        long handle = link.open(new OpenRequest(inode, object.key(), object.etag(), object.size()));
        byte[] got = new byte[(int) object.size()];
        for (long at = 0; at < object.size(); at += CHUNK) {
            // as a reader does: in a region this small, readahead may have recalled the chunk already
            ReadRequest read = new ReadRequest(handle, at, Math.min(CHUNK, object.size() - at));
            ChunkKey key = new ChunkKey(inode, at / CHUNK);
            byte[] chunk = Restaging.stageAndPin(timeout -> link.stage(read).get(timeout, TimeUnit.NANOSECONDS),
                    () -> StagedBytes.read(link.staging(), key, object.etag()), System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
            assertNotNull(chunk, "chunk " + at / CHUNK + " posted into the host's region");
            System.arraycopy(chunk, 0, got, (int) at, chunk.length);
        }
        link.release(handle);
        return got;
    }

    @Test
    void chunksArePostedIntoTheHostsOwnRegionAndEvictionsComeBackAsRecalls() throws Exception {
        byte[] body = S3Fixture.bytes(24 * CHUNK + 1000, 7); // 6 MiB through a 2 MiB region: most chunks recalled
        s3.put("data", "dir/big.bin", body).put("data", "small.txt", new byte[] {1, 2, 3});
        try (SocketLink link = connect(shimCerts, 2L << 20)) {
            assertEquals(java.util.List.of("dir/"), link.list("").commonPrefixes());
            assertArrayEquals(body, stageWhole(link, link.list("dir/").objects().getFirst()));
            assertArrayEquals(body, stageWhole(link, link.list("dir/").objects().getFirst()), "again, after recalls freed the region");
            assertArrayEquals(new byte[] {1, 2, 3}, stageWhole(link, link.list("").objects().getFirst()));
            java.util.Map<String, Object> stats = io.os2g.metrics.Stats.parse(link.agentStats());
            assertTrue(stats.toString().contains("evictions"), stats.toString());
        }
    }

    @Test
    void anUnencryptedLinkBothSidesAskedForStillAuthenticatesAndCarriesTheSameBytes() throws Exception {
        byte[] body = S3Fixture.bytes(3 * CHUNK + 17, 9);
        s3.put("data", "a.bin", body);
        try (SocketLink link = connect(shimCerts, 4L << 20, false)) {
            assertArrayEquals(body, stageWhole(link, link.list("").objects().getFirst()), "an agent that does not allow it encrypts");
        }
        agent.close();
        agent = startAgent(port, "off");
        try (SocketLink link = connect(shimCerts, 4L << 20, false)) {
            assertArrayEquals(body, stageWhole(link, link.list("").objects().getFirst()));
        }
        try (SocketLink link = connect(shimCerts, 4L << 20, true)) {
            assertArrayEquals(body, stageWhole(link, link.list("").objects().getFirst()), "a mount that does not ask is encrypted");
        }
        LinkCerts stranger = LinkCerts.issue(Files.createDirectories(tmp.resolve("other")), "other-ca", "stranger");
        assertThrows(LinkException.class, () -> connect(stranger, 4L << 20, false), "no token without the handshake");
        try (var plain = java.nio.channels.SocketChannel.open(new java.net.InetSocketAddress("127.0.0.1", port))) {
            plain.write(java.nio.ByteBuffer.wrap(new byte[36]).put(0, (byte) 'O').put(1, (byte) 'S').put(2, (byte) '2').put(3, (byte) 'T'));
            plain.socket().setSoTimeout(10_000);
            int answer;
            try {
                answer = plain.socket().getInputStream().read();
            } catch (java.net.SocketException reset) {
                answer = -1;
            }
            assertEquals(-1, answer, "a token never issued is refused");
        }
    }

    @Test
    void aPeerWithACertificateFromAnotherCaOrNoneIsRefused() throws Exception {
        LinkCerts stranger = LinkCerts.issue(Files.createDirectories(tmp.resolve("other")), "other-ca", "stranger");
        // its own CA trusts the agent's? No: the agent's certificate is from link-ca, so check both directions
        LinkCerts strangerTrustingUs = new LinkCerts(agentCerts.ca(), stranger.cert(), stranger.key());
        LinkException e = assertThrows(LinkException.class, () -> connect(strangerTrustingUs, 4L << 20));
        assertTrue(e.getMessage().contains("no agent at") || e.getMessage().contains("failed"), e.getMessage());
        assertThrows(LinkException.class, () -> connect(stranger, 4L << 20), "an agent it does not trust");
        try (var plain = java.nio.channels.SocketChannel.open(new java.net.InetSocketAddress("127.0.0.1", port))) {
            // a hello in the clear: the agent hangs up without a word
            var frame = java.nio.ByteBuffer.allocate(4 + 1 + 8 + 8).putInt(17).put((byte) 1).putLong(0).putInt(0x4f533247).putInt(9).flip();
            plain.write(frame);
            plain.socket().setSoTimeout(10_000);
            int answer;
            try {
                answer = plain.socket().getInputStream().read();
            } catch (java.net.SocketException reset) {
                answer = -1; // closed with the hello unread: a reset
            }
            assertEquals(-1, answer, "refused without an answer");
        }
        s3.put("data", "a.bin", new byte[] {4, 5});
        try (SocketLink link = connect(shimCerts, 4L << 20)) {
            assertArrayEquals(new byte[] {4, 5}, stageWhole(link, link.list("").objects().getFirst()), "still serves its own");
        }
    }

    @Test
    void chunksStagedOnTheHostOutliveAnAgentRestartAndTheNewAgentPlacesAroundThem() throws Exception {
        byte[] first = S3Fixture.bytes(4 * CHUNK, 3);
        byte[] second = S3Fixture.bytes(8 * CHUNK, 5);
        s3.put("data", "first.bin", first).put("data", "second.bin", second);
        try (SocketLink link = connect(shimCerts, 4L << 20)) {
            ObjectSummary a = link.list("").objects().stream().filter(o -> o.key().equals("first.bin")).findFirst().orElseThrow();
            ObjectSummary b = link.list("").objects().stream().filter(o -> o.key().equals("second.bin")).findFirst().orElseThrow();
            assertArrayEquals(first, stageWhole(link, a));
            long inode = new InodeTable().inodeOf(a.key());

            agent.close();
            assertArrayEquals(java.util.Arrays.copyOf(first, CHUNK), readStaged(link.staging(), inode, 0, a.etag()),
                    "staged chunks serve with the agent away");
            agent = startAgent(port, "on");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (true) {
                try {
                    link.list("");
                    break;
                } catch (LinkException notYet) {
                    assertTrue(System.nanoTime() < deadline, "the link did not come back: " + notYet.getMessage());
                    Thread.sleep(100);
                }
            }
            // the new agent fills the rest of the region: the held chunks' pages are not handed out again
            byte[] got = new byte[second.length];
            long inodeB = new InodeTable().inodeOf(b.key());
            long handle = link.open(new OpenRequest(inodeB, b.key(), b.etag(), b.size()));
            for (int c = 0; c < 4; c++) {
                link.stage(new ReadRequest(handle, (long) c * CHUNK, CHUNK)).get(10, TimeUnit.SECONDS);
                System.arraycopy(readStaged(link.staging(), inodeB, c, b.etag()), 0, got, c * CHUNK, CHUNK);
            }
            assertArrayEquals(java.util.Arrays.copyOf(second, 4 * CHUNK), java.util.Arrays.copyOf(got, 4 * CHUNK));
            for (int c = 0; c < 4; c++) {
                assertArrayEquals(java.util.Arrays.copyOfRange(first, c * CHUNK, (c + 1) * CHUNK), readStaged(link.staging(), inode, c, a.etag()),
                        "held chunk " + c + " unchanged");
            }
            // and once it needs the room, it recalls them like its own
            assertArrayEquals(second, stageWhole(link, b));
        }
    }

    @Test
    void filesWrittenThroughAMountOnTheHostArePostedToTheAgentAndUploaded() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/fuse")) && "root".equals(System.getProperty("user.name")), "needs root and /dev/fuse");
        byte[] small = S3Fixture.bytes(100_000, 1);
        byte[] checkpoint = S3Fixture.bytes((20 << 20) + 12345, 2); // three parts
        Path mnt = Files.createDirectory(tmp.resolve("mnt"));
        Gateway gateway = Gateway.open(new MountConfigBuilder("data", mnt.toString()).agent("tcp://127.0.0.1:" + port, "off")
                .link(shimCerts.cert(), shimCerts.key(), shimCerts.ca(), null).staging(tmp.resolve("mount-staging"), "64M", "1M", "8M", 0)
                .writes(true, false, false).build());
        try {
            Files.write(mnt.resolve("small.bin"), small);
            Files.write(mnt.resolve("ckpt.pt"), checkpoint);
            assertArrayEquals(small, s3.get("data", "small.bin"));
            assertArrayEquals(checkpoint, s3.get("data", "ckpt.pt"));
            assertArrayEquals(checkpoint, Files.readAllBytes(mnt.resolve("ckpt.pt")), "read back through the host's region");
        } finally {
            gateway.close();
        }
    }

    @Test
    void aReadOfWhatIsNotStagedFailsWithinTheDeadlineWhileTheAgentIsAway() throws Exception {
        s3.put("data", "a.bin", S3Fixture.bytes(CHUNK, 1)).put("data", "b.bin", S3Fixture.bytes(CHUNK, 2));
        try (SocketLink link = connect(shimCerts, 4L << 20)) {
            ObjectSummary b = link.list("").objects().stream().filter(o -> o.key().equals("b.bin")).findFirst().orElseThrow();
            long handle = link.open(new OpenRequest(new InodeTable().inodeOf(b.key()), b.key(), b.etag(), b.size()));
            agent.close();
            long t0 = System.nanoTime();
            ExecutionException e = assertThrows(ExecutionException.class, () -> {
                for (int i = 0; i < 100; i++) {
                    link.stage(new ReadRequest(handle, 0, 10)).get(15, TimeUnit.SECONDS);
                    Thread.sleep(20);
                }
            });
            assertTrue(e.getCause() instanceof LinkException, String.valueOf(e.getCause()));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(12), "EIO within the deadline, never a hang");
        }
    }
}
