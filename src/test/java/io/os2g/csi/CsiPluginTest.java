package io.os2g.csi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.os2g.csi.v1.GetPluginInfoRequest;
import io.os2g.csi.v1.IdentityGrpc;
import io.os2g.csi.v1.NodeGetCapabilitiesRequest;
import io.os2g.csi.v1.NodeGetInfoRequest;
import io.os2g.csi.v1.NodeGetVolumeStatsRequest;
import io.os2g.csi.v1.NodeGetVolumeStatsResponse;
import io.os2g.csi.v1.NodeGrpc;
import io.os2g.csi.v1.NodePublishVolumeRequest;
import io.os2g.csi.v1.NodeServiceCapability;
import io.os2g.csi.v1.NodeUnpublishVolumeRequest;
import io.os2g.csi.v1.ProbeRequest;
import io.os2g.csi.v1.VolumeCapability;
import io.os2g.fuse.MountTable;
import io.os2g.support.S3Fixture;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code os2g csi} as the kubelet drives it: a plugin process on a unix socket, called over gRPC with the
 * CSI messages, making real FUSE mounts of a real S3 server; what a pod sees at its target path checked
 * byte for byte, and what is left on the node after each call.
 */
@Tag("s3")
class CsiPluginTest {

    private static final String BUCKET = "csi-data";
    private static final byte[] BIG = bytes(3 * 1024 * 1024 + 17, 1);
    private static final byte[] SMALL = bytes(1000, 2);

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private Path secretsDir;
    private Path stagingDir;
    private Process plugin;
    private Process mounter;
    private Path mounterSocket;
    private Process agent;
    private Path agentSocket;
    private Path pluginLog;
    private EpollEventLoopGroup loop;
    private ManagedChannel channel;
    private NodeGrpc.NodeBlockingStub node;

    @BeforeEach
    void start() throws Exception {
        assumeTrue(Files.isWritable(Path.of("/dev/fuse")) && "root".equals(System.getProperty("user.name")), "needs root and /dev/fuse");
        S3Fixture s3 = new S3Fixture(proxy).bucket(BUCKET);
        s3.put(BUCKET, "train/big.bin", BIG).put(BUCKET, "train/small.bin", SMALL);
        String id = Long.toHexString(new Random().nextLong());
        secretsDir = Path.of("/dev/shm/os2g-csi-test-" + id);
        stagingDir = Path.of("/dev/shm/os2g-csi-test-staging-" + id);
        pluginLog = tmp.resolve("plugin.log");
        startPlugin();
        loop = new EpollEventLoopGroup(1);
        channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(tmp.resolve("csi.sock").toString()))
                .channelType(EpollDomainSocketChannel.class).eventLoopGroup(loop).usePlaintext()
                .withOption(io.grpc.netty.shaded.io.netty.channel.ChannelOption.SO_KEEPALIVE, null).build();
        node = NodeGrpc.newBlockingStub(channel);
    }

    private void startPlugin() throws IOException, InterruptedException {
        Path socket = tmp.resolve("csi.sock");
        Files.deleteIfExists(socket);
        List<String> command = os2g("csi", "--endpoint", "unix://" + socket, "--node-id", "node-1", "--state-dir", tmp.resolve("state").toString(),
                "--secrets-dir", secretsDir.toString(), "--staging-dir", stagingDir.toString());
        if (mounterSocket != null) {
            command.addAll(List.of("--mounter", "unix://" + mounterSocket));
        }
        if (agentSocket != null) {
            command.addAll(List.of("--agent", "unix:" + agentSocket));
        }
        plugin = started(command, socket);
    }

    /** The os2g command line on this build's classes, in a JVM of its own. */
    private static List<String> os2g(String... args) {
        List<String> command = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), "io.os2g.cli.Os2g"));
        command.addAll(List.of(args));
        return command;
    }

    /** Starts {@code command}, logging to the plugin's log, and waits for its {@code socket}. */
    private Process started(List<String> command, Path socket) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(pluginLog.toFile())).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.exists(socket)) {
            assertTrue(process.isAlive() && System.nanoTime() < deadline, () -> "no socket " + socket + ": " + log());
            Thread.sleep(20);
        }
        return process;
    }

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
        // whatever a failed test left mounted: the targets, then the plugin's mounts (their processes then end)
        for (MountTable.Entry e : MountTable.entries().reversed()) {
            if (e.mountPoint().startsWith(tmp)) {
                new ProcessBuilder("umount", "-l", e.mountPoint().toString()).start().waitFor();
            }
        }
        for (Process p : new Process[] {plugin, mounter, agent}) {
            if (p != null) {
                p.destroy();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
        deleteTree(secretsDir);
        deleteTree(stagingDir);
    }

    @Test
    void identityAndNodeInfoAreWhatTheKubeletRegisters() {
        IdentityGrpc.IdentityBlockingStub identity = IdentityGrpc.newBlockingStub(channel);
        assertEquals(CsiServer.DRIVER_NAME, identity.getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
        assertTrue(identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue());
        assertEquals("node-1", node.nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getNodeId());
        assertEquals(List.of(NodeServiceCapability.RPC.Type.GET_VOLUME_STATS, NodeServiceCapability.RPC.Type.VOLUME_CONDITION),
                node.nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList().stream()
                        .map(c -> c.getRpc().getType()).toList());
    }

    @Test
    void podsOfOneVolumeShareOneMountThatEndsWithTheLastUnpublish() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        Path b = tmp.resolve("pods/b/volume");
        node.nodePublishVolume(publish("vol-1", a, false));
        node.nodePublishVolume(publish("vol-1", a, false)); // the kubelet retries: same result
        node.nodePublishVolume(publish("vol-1", b, false));
        assertEquals(1, mountDirs().size(), "one mount process for the volume");
        assertArrayEquals(BIG, Files.readAllBytes(a.resolve("train/big.bin")));
        assertArrayEquals(SMALL, Files.readAllBytes(b.resolve("train/small.bin")));
        Path credentials = onlyFile(secretsDir);
        assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(credentials)));

        NodeGetVolumeStatsResponse stats = node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId("vol-1")
                .setVolumePath(a.toString()).build());
        assertFalse(stats.getVolumeCondition().getAbnormal(), stats.toString());

        node.nodeUnpublishVolume(unpublish("vol-1", a));
        assertFalse(Files.exists(a), "the target is removed");
        assertArrayEquals(BIG, Files.readAllBytes(b.resolve("train/big.bin")), "the other pod still reads");
        node.nodeUnpublishVolume(unpublish("vol-1", a)); // again: success, nothing to do
        node.nodeUnpublishVolume(unpublish("vol-1", b));
        awaitNoMounts();
        assertTrue(mountDirs().isEmpty(), "the mount's state is gone");
        assertFalse(Files.exists(credentials), "the credentials file is removed with the volume");
        assertTrue(!Files.exists(stagingDir) || list(stagingDir).isEmpty(), "the staging region is freed");
        assertFalse(log().contains(S3Fixture.SECRET_KEY), "no secret in the plugin's log");
        assertFalse(log().contains("WARN"), log());
    }

    @Test
    void aRestartedPluginKeepsItsMountsServingAndUnpublishesThem() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        node.nodePublishVolume(publish("vol-2", a, false));
        plugin.destroyForcibly().waitFor();
        assertArrayEquals(BIG, Files.readAllBytes(a.resolve("train/big.bin")), "reads go on while the plugin is down");
        startPlugin();
        assertArrayEquals(SMALL, Files.readAllBytes(a.resolve("train/small.bin")));
        Path b = tmp.resolve("pods/b/volume");
        node.nodePublishVolume(publish("vol-2", b, false));
        assertEquals(1, mountDirs().size(), "the restarted plugin shares the mount it found");
        node.nodeUnpublishVolume(unpublish("vol-2", a));
        node.nodeUnpublishVolume(unpublish("vol-2", b));
        awaitNoMounts();
    }

    @Test
    void withAMounterThePluginsRestartLeavesMountsServing() throws Exception {
        plugin.destroy();
        plugin.waitFor();
        mounterSocket = tmp.resolve("mounter/mounter.sock");
        mounter = started(os2g("csi-mounter", "--listen", "unix://" + mounterSocket), mounterSocket);
        startPlugin();
        Path a = tmp.resolve("pods/a/volume");
        node.nodePublishVolume(publish("vol-6", a, false));
        plugin.destroyForcibly().waitFor();
        assertArrayEquals(BIG, Files.readAllBytes(a.resolve("train/big.bin")), "reads go on while the plugin is down");
        startPlugin();
        Path b = tmp.resolve("pods/b/volume");
        node.nodePublishVolume(publish("vol-6", b, false));
        assertEquals(1, mountDirs().size(), "the restarted plugin shares the mount the mounter runs");
        assertArrayEquals(SMALL, Files.readAllBytes(b.resolve("train/small.bin")));
        Path log = mountDirs().getFirst().resolve("mount.log");
        node.nodeUnpublishVolume(unpublish("vol-6", a));
        node.nodeUnpublishVolume(unpublish("vol-6", b));
        awaitNoMounts();
        assertFalse(Files.exists(log), "the mount's state is removed once the mounter saw its process end");
        assertTrue(mounter.isAlive());
        assertTrue(log().contains("ended with status 0"), log());
    }

    @Test
    void withANodeAgentVolumesCarryNoSecret() throws Exception {
        plugin.destroy();
        plugin.waitFor();
        agentSocket = tmp.resolve("agent/agent.sock");
        List<String> command = os2g("agent", "--listen", "unix:" + agentSocket, "--endpoint", proxy.getUri().toString(),
                "--credentials-file", S3Fixture.credentialsFile(Files.createDirectories(tmp.resolve("agent"))).toString(),
                "--staging-dir", stagingDir.resolve("agent").toString());
        agent = started(command, agentSocket);
        startPlugin();
        Path a = tmp.resolve("pods/a/volume");
        assertRefused(Status.Code.INVALID_ARGUMENT, "node agent", publish("vol-7", a, false));
        node.nodePublishVolume(request("vol-7", a, false, attributes(Map.of()), Map.of()));
        assertArrayEquals(BIG, Files.readAllBytes(a.resolve("train/big.bin")));
        assertTrue(list(secretsDir).isEmpty(), "no credentials file: the agent signs");
        node.nodeUnpublishVolume(unpublish("vol-7", a));
        awaitNoMounts();
    }

    @Test
    void aVolumeSignedWithThePodsServiceAccountTokenExchangesItWithSts() throws Exception {
        List<String> identities = new java.util.concurrent.CopyOnWriteArrayList<>();
        com.sun.net.httpserver.HttpServer sts = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        sts.createContext("/", exchange -> {
            String form = new String(exchange.getRequestBody().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            for (String pair : form.split("&")) {
                if (pair.startsWith("WebIdentityToken=")) {
                    identities.add(java.net.URLDecoder.decode(pair.substring("WebIdentityToken=".length()), java.nio.charset.StandardCharsets.UTF_8));
                }
            }
            byte[] body = ("<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                    + "<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>" + S3Fixture.ACCESS_KEY + "</AccessKeyId>"
                    + "<SecretAccessKey>" + S3Fixture.SECRET_KEY + "</SecretAccessKey><SessionToken>session-1</SessionToken>"
                    + "<Expiration>" + java.time.Instant.now().plusSeconds(3600).truncatedTo(java.time.temporal.ChronoUnit.SECONDS) + "</Expiration>"
                    + "</Credentials><AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/trainer/os2g</Arn><AssumedRoleId>A:os2g</AssumedRoleId>"
                    + "</AssumedRoleUser></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
                    + "</AssumeRoleWithWebIdentityResponse>").getBytes(java.nio.charset.StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/xml");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        sts.start();
        try {
            Map<String, String> attributes = new java.util.HashMap<>(attributes(Map.of("role_arn", "arn:aws:iam::1:role/trainer",
                    "sts_endpoint", "http://127.0.0.1:" + sts.getAddress().getPort(), "region", "us-east-1")));
            attributes.put("csi.storage.k8s.io/serviceAccount.name", "trainer");
            attributes.put("csi.storage.k8s.io/pod.namespace", "ml");
            Path a = tmp.resolve("pods/a/volume");
            assertRefused(Status.Code.FAILED_PRECONDITION, "service-account token", request("vol-8", a, false, attributes, Map.of()));
            attributes.put("csi.storage.k8s.io/serviceAccount.tokens", "{\"sts.amazonaws.com\":{\"token\":\"pod-token-1\","
                    + "\"expirationTimestamp\":\"2030-01-01T00:00:00Z\"}}");
            node.nodePublishVolume(request("vol-8", a, false, attributes, Map.of()));
            assertArrayEquals(SMALL, Files.readAllBytes(a.resolve("train/small.bin")));
            assertEquals(List.of("pod-token-1"), identities, "the pod's token went to STS");
            Path token = onlyFile(secretsDir);
            assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(token)));
            // the kubelet republishes with a fresh token: the file the mount's next exchange reads is replaced
            attributes.put("csi.storage.k8s.io/serviceAccount.tokens", "{\"sts.amazonaws.com\":{\"token\":\"pod-token-2\"}}");
            node.nodePublishVolume(request("vol-8", a, false, attributes, Map.of()));
            assertEquals("pod-token-2", Files.readString(token));
            assertFalse(log().contains("pod-token"), "no token in the plugin's log");
            node.nodeUnpublishVolume(unpublish("vol-8", a));
            awaitNoMounts();
            assertFalse(Files.exists(token), "the token file goes with the volume");
        } finally {
            sts.stop(0);
        }
    }

    @Test
    void aReadOnlyVolumeRefusesWrites() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        node.nodePublishVolume(publish("vol-3", a, true, Map.of("allow_writes", "true", "staging_size", "64M")));
        FileSystemException refused = assertThrows(FileSystemException.class, () -> Files.writeString(a.resolve("new.txt"), "x"));
        assertTrue(refused.getMessage().contains("Read-only file system"), refused.getMessage());
        Path b = tmp.resolve("pods/b/volume");
        node.nodePublishVolume(publish("vol-4", b, false)); // no allow_writes: read-only whatever the pod asks
        refused = assertThrows(FileSystemException.class, () -> Files.writeString(b.resolve("new.txt"), "x"));
        assertTrue(refused.getMessage().contains("Read-only file system"), refused.getMessage());
        node.nodeUnpublishVolume(unpublish("vol-3", a));
        node.nodeUnpublishVolume(unpublish("vol-4", b));
        awaitNoMounts();
    }

    @Test
    void badAttributesAndSecretsAreRefusedWithNothingLeft() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        assertRefused(Status.Code.INVALID_ARGUMENT, "volume attribute colour", publish("v", a, false, Map.of("colour", "blue")));
        assertRefused(Status.Code.INVALID_ARGUMENT, "metadata_ttl", publish("v", a, false, Map.of("metadata_ttl", "soon")));
        assertRefused(Status.Code.INVALID_ARGUMENT, "staging_dir", publish("v", a, false, Map.of("staging_dir", "/tmp")));
        assertRefused(Status.Code.INVALID_ARGUMENT, "expand_tar", publish("v", a, false, Map.of("expand_tar", "yes")));
        assertRefused(Status.Code.INVALID_ARGUMENT, "bucket", request("v", a, false, Map.of("endpoint", proxy.getUri().toString()), secret()));
        assertRefused(Status.Code.INVALID_ARGUMENT, "secret has no secret_access_key",
                request("v", a, false, attributes(Map.of()), Map.of("access_key_id", "x")));
        assertRefused(Status.Code.INVALID_ARGUMENT, "block", publish("v", a, false).toBuilder()
                .setVolumeCapability(VolumeCapability.newBuilder().setBlock(VolumeCapability.BlockVolume.getDefaultInstance())).build());
        // a wrong secret: the mount's own check against the store refuses it, in one line
        String wrong = "not-the-secret-" + Long.toHexString(new Random().nextLong());
        StatusRuntimeException e = assertRefused(Status.Code.INVALID_ARGUMENT, "os2g mount of volume v failed",
                request("v", a, false, attributes(Map.of()), Map.of("access_key_id", S3Fixture.ACCESS_KEY, "secret_access_key", wrong)));
        assertFalse(e.getMessage().contains(wrong));
        assertFalse(log().contains(wrong), "no secret in the plugin's log");
        // none: unsigned, which this server refuses too
        assertRefused(Status.Code.INVALID_ARGUMENT, "os2g mount of volume v failed", request("v", a, false, attributes(Map.of()), Map.of()));
        assertTrue(mountDirs().isEmpty(), "no half-made mount left");
        assertFalse(MountTable.entries().stream().anyMatch(m -> m.mountPoint().startsWith(tmp)), "nothing mounted");
        assertTrue(!Files.exists(secretsDir) || list(secretsDir).isEmpty(), "no credentials file left");
    }

    @Test
    void aMountWhoseProcessDiedIsReportedAndMountedAgain() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        node.nodePublishVolume(publish("vol-5", a, false));
        long pid = Long.parseLong(Files.readAllLines(mountDirs().getFirst().resolve(SharedMount.FILE)).stream()
                .filter(l -> l.startsWith("pid=")).findFirst().orElseThrow().substring(4));
        ProcessHandle.of(pid).orElseThrow().destroyForcibly();
        NodeGetVolumeStatsRequest statsOfA = NodeGetVolumeStatsRequest.newBuilder().setVolumeId("vol-5").setVolumePath(a.toString()).build();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!node.nodeGetVolumeStats(statsOfA).getVolumeCondition().getAbnormal()) {
            assertTrue(System.nanoTime() < deadline, "the ended mount is never reported abnormal");
            Thread.sleep(20);
        }
        assertTrue(node.nodeGetVolumeStats(statsOfA).getVolumeCondition().getMessage().contains("has ended"));
        Path b = tmp.resolve("pods/b/volume");
        node.nodePublishVolume(publish("vol-5", b, false)); // a new pod gets a new mount
        assertArrayEquals(SMALL, Files.readAllBytes(b.resolve("train/small.bin")));
        node.nodeUnpublishVolume(unpublish("vol-5", a));
        node.nodeUnpublishVolume(unpublish("vol-5", b));
        awaitNoMounts();
    }

    @Test
    void aPluginKilledMidPublishLeavesNothingOnceRestartedAndUnpublished() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        NodeGrpc.NodeFutureStub async = NodeGrpc.newFutureStub(channel);
        var publishing = async.nodePublishVolume(publish("vol-9", a, false));
        // the mount process is started (recorded with its pid) and has not answered yet: the plugin dies
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long pid;
        while ((pid = recordedPid()) <= 0) {
            assertTrue(System.nanoTime() < deadline && !publishing.isDone(), "the mount was never recorded: " + log());
            Thread.sleep(5);
        }
        plugin.destroyForcibly().waitFor();
        assertThrows(java.util.concurrent.ExecutionException.class, publishing::get);
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        startPlugin();
        channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(tmp.resolve("csi.sock").toString()))
                .channelType(EpollDomainSocketChannel.class).eventLoopGroup(loop).usePlaintext().build();
        node = NodeGrpc.newBlockingStub(channel);
        node.nodeUnpublishVolume(unpublish("vol-9", a)); // the pod was deleted meanwhile: no retry of the publish
        awaitNoMounts();
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!ended(pid)) {
            assertTrue(System.nanoTime() < deadline, "mount process " + pid + " still runs");
            Thread.sleep(20);
        }
        assertTrue(mountDirs().isEmpty(), "the mount's state is gone");
        assertTrue(!Files.exists(secretsDir) || list(secretsDir).isEmpty(), "no credentials file left");
        assertTrue(!Files.exists(stagingDir) || list(stagingDir).isEmpty(), () -> "no staging region left: " + log());
        assertTrue(log().contains("its publish did not finish"), log());
    }

    @Test
    void statsAndUnpublishActOnlyOnTheVolumePublishedAtThePath() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        node.nodePublishVolume(publish("vol-10", a, false));
        NodeGetVolumeStatsResponse stats = node.nodeGetVolumeStats(stats("vol-10", a.toString()));
        assertFalse(stats.getVolumeCondition().getAbnormal(), stats.toString());
        assertEquals(1, stats.getUsageCount(), stats.toString());
        assertEquals(0, stats.getUsage(0).getTotal(), "a read-only volume has no room to fill: " + stats);
        assertEquals(0, stats.getUsage(0).getUsed(), "and is not full: " + stats);

        for (String[] asked : new String[][] {{"vol-10", "some/path"}, {"vol-10", tmp.resolve("pods/none").toString()},
                                              {"vol-10", tmp.toString()}, {"vol-11", a.toString()}}) {
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> node.nodeGetVolumeStats(stats(asked[0], asked[1])));
            assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode(), String.join(" at ", asked) + ": " + e.getMessage());
        }
        for (String[] asked : new String[][] {{"", a.toString()}, {"vol-10", ""}}) {
            StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> node.nodeGetVolumeStats(stats(asked[0], asked[1])));
            assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode(), e.getMessage());
        }

        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> node.nodeUnpublishVolume(unpublish("vol-11", a)));
        assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode(), e.getMessage());
        assertArrayEquals(SMALL, Files.readAllBytes(a.resolve("train/small.bin")), "another volume's id unpublished nothing");

        Path b = tmp.resolve("pods/b/volume");
        VolumeCapability.Builder mount = VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance());
        assertRefused(Status.Code.INVALID_ARGUMENT, "access_mode", publish("vol-10", b, false).toBuilder().setVolumeCapability(mount).build());
        assertRefused(Status.Code.INVALID_ARGUMENT, "access_type", publish("vol-10", b, false).toBuilder()
                .setVolumeCapability(VolumeCapability.newBuilder().setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY))).build());
        node.nodeUnpublishVolume(unpublish("vol-10", a));
        awaitNoMounts();
    }

    @Test
    void mountFlagsAreMountOptionsAndTheBindsFlags() throws Exception {
        Path a = tmp.resolve("pods/a/volume");
        node.nodePublishVolume(withFlags(publish("vol-12", a, false, Map.of("staging_size", "64M")),
                "allow_writes", "metadata_ttl=60,noexec", "nodev"));
        Files.writeString(a.resolve("written.txt"), "from a pod");
        assertEquals("from a pod", Files.readString(a.resolve("written.txt")), "allow_writes as a mount option");
        String options = mountOptions(a);
        assertTrue(options.contains("noexec") && !options.contains("ro,") && !options.startsWith("ro"), options);
        NodeGetVolumeStatsResponse stats = node.nodeGetVolumeStats(stats("vol-12", a.toString()));
        assertTrue(stats.getUsage(0).getAvailable() > 0, "a writable volume has room: " + stats);

        Path b = tmp.resolve("pods/b/volume");
        node.nodePublishVolume(withFlags(publish("vol-12", b, false, Map.of("staging_size", "64M")), "allow_writes", "metadata_ttl=60", "ro"));
        assertTrue(mountOptions(b).startsWith("ro"), mountOptions(b));
        assertEquals(1, mountDirs().size(), "same options, one mount: the bind's flags are each pod's");

        Path c = tmp.resolve("pods/c/volume");
        assertRefused(Status.Code.INVALID_ARGUMENT, "mount option colour", withFlags(publish("vol-13", c, false), "colour=blue"));
        assertRefused(Status.Code.INVALID_ARGUMENT, "mount option metadata_ttl", withFlags(publish("vol-13", c, false), "metadata_ttl=5"));
        assertRefused(Status.Code.INVALID_ARGUMENT, "mount option staging_dir", withFlags(publish("vol-13", c, false), "staging_dir=/tmp"));
        assertRefused(Status.Code.INVALID_ARGUMENT, "mount option -o", withFlags(publish("vol-13", c, false), "-o"));
        node.nodeUnpublishVolume(unpublish("vol-12", a));
        node.nodeUnpublishVolume(unpublish("vol-12", b));
        awaitNoMounts();
    }

    private static NodePublishVolumeRequest withFlags(NodePublishVolumeRequest request, String... flags) {
        VolumeCapability capability = request.getVolumeCapability();
        return request.toBuilder().setVolumeCapability(capability.toBuilder()
                .setMount(capability.getMount().toBuilder().addAllMountFlags(List.of(flags)))).build();
    }

    private static NodeGetVolumeStatsRequest stats(String volume, String path) {
        return NodeGetVolumeStatsRequest.newBuilder().setVolumeId(volume).setVolumePath(path).build();
    }

    /** The per-mount options of the mount at {@code target}, as /proc/self/mountinfo lists them. */
    private static String mountOptions(Path target) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().map(l -> l.split(" "))
                .filter(f -> f[4].equals(target.toString())).map(f -> f[5]).reduce((x, y) -> y).orElseThrow();
    }

    /** Whether process {@code pid} has ended (gone, or a zombie its new parent has not reaped yet). */
    private static boolean ended(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            return stat.charAt(stat.lastIndexOf(')') + 2) == 'Z';
        } catch (IOException e) {
            return true;
        }
    }

    /** The pid recorded for the plugin's only mount, or -1 before there is one. */
    private long recordedPid() throws IOException {
        for (Path dir : mountDirs()) {
            Path record = dir.resolve(SharedMount.FILE);
            if (Files.exists(record)) {
                SharedMount m = SharedMount.load(dir);
                if (m != null && m.pid() > 0) {
                    return m.pid();
                }
            }
        }
        return -1;
    }

    private StatusRuntimeException assertRefused(Status.Code code, String words, NodePublishVolumeRequest request) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> node.nodePublishVolume(request));
        assertEquals(code, e.getStatus().getCode(), e.getMessage());
        assertTrue(e.getMessage().contains(words), e.getMessage());
        return e;
    }

    private Map<String, String> attributes(Map<String, String> extra) {
        Map<String, String> attributes = new java.util.HashMap<>(Map.of("bucket", BUCKET, "endpoint", proxy.getUri().toString(),
                "csi.storage.k8s.io/pod.name", "trainer-0", "metadata_ttl", "60"));
        attributes.putAll(extra);
        return attributes;
    }

    private static Map<String, String> secret() {
        return Map.of("access_key_id", S3Fixture.ACCESS_KEY, "secret_access_key", S3Fixture.SECRET_KEY);
    }

    private NodePublishVolumeRequest publish(String volume, Path target, boolean readOnly) {
        return publish(volume, target, readOnly, Map.of());
    }

    private NodePublishVolumeRequest publish(String volume, Path target, boolean readOnly, Map<String, String> extra) {
        return request(volume, target, readOnly, attributes(extra), secret());
    }

    private static NodePublishVolumeRequest request(String volume, Path target, boolean readOnly, Map<String, String> attributes,
                                                    Map<String, String> secrets) {
        return NodePublishVolumeRequest.newBuilder().setVolumeId(volume).setTargetPath(target.toString()).setReadonly(readOnly)
                .setVolumeCapability(VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance())
                        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER)))
                .putAllVolumeContext(attributes).putAllSecrets(secrets).build();
    }

    private static NodeUnpublishVolumeRequest unpublish(String volume, Path target) {
        return NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume).setTargetPath(target.toString()).build();
    }

    /** The plugin's mounts: one directory each in its state dir. */
    private List<Path> mountDirs() throws IOException {
        Path state = tmp.resolve("state");
        return Files.exists(state) ? list(state).stream().filter(Files::isDirectory).toList() : List.of();
    }

    private void awaitNoMounts() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (MountTable.entries().stream().anyMatch(m -> m.mountPoint().startsWith(tmp))) {
            assertTrue(System.nanoTime() < deadline, "mounts left: " + MountTable.entries());
            Thread.sleep(20);
        }
    }

    private static Path onlyFile(Path dir) throws IOException {
        try (Stream<Path> walk = Files.walk(dir)) {
            List<Path> files = walk.filter(Files::isRegularFile).toList();
            assertEquals(1, files.size(), files.toString());
            return files.getFirst();
        }
    }

    private static List<Path> list(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    private String log() {
        try {
            return Files.readString(pluginLog);
        } catch (IOException e) {
            return "";
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    private static byte[] bytes(int size, int seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }
}
