package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rules between a mount's options, as the command line, fstab and CSI attributes all reach them. */
@Tag("unit")
class MountConfigBuilderTest {

    @TempDir
    Path mountPoint;
    @TempDir
    Path staging;

    private MountConfigBuilder mount(String source) {
        return new MountConfigBuilder(source, mountPoint.toString())
                .store(bucket -> null, Duration.ofSeconds(60), 32)
                .staging(staging, "64M", "8M", "256M", 256);
    }

    private static String refusal(MountConfigBuilder builder) {
        return assertThrows(UsageError.class, builder::build).getMessage();
    }

    @Test
    void theSourceIsABucketAndAPrefixEndingInASlash() {
        MountConfig config = mount("data/train").build();
        assertEquals("data", config.bucket());
        assertEquals("train/", config.prefix());
        assertEquals("", mount("data").build().prefix());
        assertTrue(refusal(mount("/train")).contains("no bucket name"));
    }

    @Test
    void kernelOptionsCarryTheTtlAndTheUsersOptionsButNotRo() {
        MountConfig config = mount("data").metadataTtl("60").fsname("a,b").fuseOptions(List.of("ro", "allow_other", " ")).build();
        assertEquals(List.of("fsname=a_b", "subtype=os2g", "default_permissions", "attr_timeout=60", "entry_timeout=60",
                "negative_timeout=60", "allow_other"), config.fuseOptions());
        assertEquals(Duration.ofSeconds(60), config.metadataTtl());
        MountConfig forever = mount("data").metadataTtl("forever").build();
        assertNull(forever.metadataTtl());
        assertTrue(forever.fuseOptions().contains("attr_timeout=" + 365L * 24 * 3600));
        assertTrue(refusal(mount("data").metadataTtl("-1")).contains("--metadata-ttl"));
    }

    @Test
    void sizesMustFitTogether() {
        assertTrue(refusal(mount("data").staging(staging, "64M", "3M", "256M", 256)).contains("--chunk-size must be a power of two"));
        assertTrue(refusal(mount("data").staging(staging, "4M", "8M", "256M", 256)).contains("is below one chunk"));
        assertTrue(refusal(mount("data").staging(staging, "64M", "8M", "256M", -1)).contains("--dir-prefetch"));
    }

    @Test
    void writesNeedTheirSwitchAndRoom() {
        assertTrue(refusal(mount("data").writes(false, true, false)).contains("--allow-overwrite needs --allow-writes"));
        assertTrue(refusal(mount("data").writes(false, false, true)).contains("--allow-delete needs --allow-writes"));
        assertTrue(refusal(mount("data").staging(staging, "16M", "8M", "256M", 256).writes(true, false, false))
                .contains("--allow-writes needs --staging-size of at least 32M"));
        assertTrue(refusal(mount("data").writes(true, false, false).fuseOptions(List.of("ro"))).contains("contradict"));
        MountConfig writable = mount("data").writes(true, true, false).build();
        assertEquals(0644, writable.fs().fileMode());
        assertEquals(0755, writable.fs().dirMode());
        assertTrue(writable.fs().writes().overwrite());
        MountConfig readOnly = mount("data").build();
        assertEquals(0444, readOnly.fs().fileMode());
        assertFalse(readOnly.fs().writes().newFiles());
    }

    @Test
    void ownershipAndModesAreChecked() {
        MountConfig config = mount("data").ownership(1000, 100, "0640", "0750").build();
        assertEquals(1000, config.fs().uid());
        assertEquals(0640, config.fs().fileMode());
        assertTrue(refusal(mount("data").ownership(-1, null, null, null)).contains("--uid"));
        assertTrue(refusal(mount("data").ownership(null, null, "4755", null)).contains("--file-mode must be an octal mode"));
        assertTrue(refusal(mount("data").ownership(null, null, null, "9")).contains("--dir-mode"));
    }

    @Test
    void anAgentTakesNoDiskCacheAndIsAUnixSocketOrATcpPortBehindTls() {
        MountConfig split = mount("data").agent("unix:/run/os2g/agent.sock", "off").build();
        assertEquals(new io.os2g.link.LinkAddress.Unix(Path.of("/run/os2g/agent.sock")), split.agentAddress());
        assertFalse(split.agentReplies());
        assertNull(split.store(), "with an agent this process resolves no credentials");
        assertTrue(refusal(mount("data").agent("http://host:1", "on")).contains("unix:PATH or tcp://HOST:PORT"));
        assertTrue(refusal(mount("data").agent("tcp://198.18.0.2:7070", "on")).contains("--link-cert, --link-key and --link-ca"));
        assertTrue(refusal(mount("data").agent("tcp://198.18.0.2:7070", "on").link(staging, null, null, null)).contains("--link-key is missing"));
        assertTrue(refusal(mount("data").link(staging, staging, staging, null)).contains("are for a mount with --agent tcp://"));
        assertTrue(refusal(mount("data").agent("unix:/a.sock", "on").link(staging, staging, staging, null)).contains("for a tcp:// link"));
        assertTrue(refusal(mount("data").link(null, null, null, "off")).contains("are for a mount with --agent tcp://"));
        assertEquals(new io.os2g.link.LinkAddress.Tcp("127.0.0.1", 7070), mount("data").agent("tcp://127.0.0.1:7070", "on").build().agentAddress(),
                "loopback needs no certificates (one machine)");
        assertTrue(refusal(mount("data").agent("unix:/a.sock", "maybe")).contains("--agent-replies must be on or off"));
        assertTrue(refusal(mount("data").agent("unix:/a.sock", "on").cache(staging, "1G", 5))
                .contains("the disk cache is the agent's"));
        assertTrue(refusal(mount("data").gpu(-2)).contains("--gpu"));
    }

    @Test
    void aDiskCacheIsBoundedSensibly() {
        assertEquals(1L << 30, mount("data").cache(staging, "1G", 5).build().cache().maxBytes());
        assertNull(mount("data").build().cache());
        assertTrue(refusal(mount("data").cache(null, "1G", 5)).contains("--cache-size needs --cache-dir"));
        assertTrue(refusal(mount("data").cache(staging, "1M", 5)).contains("at least 64M"));
        assertTrue(refusal(mount("data").cache(staging, null, 95)).contains("--cache-min-free"));
    }

    @Test
    void aSharedCacheIsAnS3UrlOnTheOriginsStoreOptionsUnlessNamed() {
        StoreSettings origin = new StoreSettings("http://origin:9000", "eu-west-1", null, null, false, null, false, false, 32, 30, 10);
        MountConfig config = new MountConfigBuilder("data", mountPoint.toString()).store(origin).staging(staging, "64M", "8M", "256M", 256)
                .sharedCache("s3://cache/train", null, null, null).build();
        assertEquals("cache", config.sharedCache().store().bucket());
        assertEquals("train/", config.sharedCache().prefix());
        assertEquals("http://origin:9000", config.sharedCache().store().endpoint().toString());
        assertEquals(Duration.ofSeconds(2), config.sharedCache().store().retry().requestTimeout(), "a slow tier is bypassed, not waited for");
        assertEquals(1, config.sharedCache().store().retry().maxAttempts());
        MountConfig near = new MountConfigBuilder("data", mountPoint.toString()).store(origin).staging(staging, "64M", "8M", "256M", 256)
                .sharedCache("s3://cache", "http://near:9000", null, null).build();
        assertEquals("", near.sharedCache().prefix());
        assertEquals("http://near:9000", near.sharedCache().store().endpoint().toString());
        assertNull(mount("data").build().sharedCache());
        for (String bad : new String[] {"cache", "s3://", "s3:///train", "http://cache/x"}) {
            assertTrue(refusal(mount("data").sharedCache(bad, null, null, null)).contains("--shared-cache must be s3://BUCKET[/PREFIX]"), bad);
        }
        assertTrue(refusal(mount("data").sharedCache(null, "http://near:9000", null, null)).contains("need --shared-cache"));
        assertTrue(refusal(mount("data").agent("unix:/tmp/a.sock", "on").sharedCache("s3://cache", null, null, null))
                .contains("the shared cache is the agent's"));
    }

    @Test
    void aSharedCacheKeyIsASecretOfAtLeast32BytesOthersCannotRead() throws Exception {
        StoreSettings origin = new StoreSettings("http://origin:9000", null, null, null, false, null, false, false, 32, 30, 10);
        Path key = staging.resolve("key");
        java.nio.file.Files.write(key, new byte[32]);
        java.nio.file.Files.setPosixFilePermissions(key, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        MountConfigBuilder signed = new MountConfigBuilder("data", mountPoint.toString()).store(origin).staging(staging, "64M", "8M", "256M", 256)
                .sharedCache("s3://cache", null, null, key);
        assertEquals(key.toAbsolutePath(), signed.build().sharedCache().key());
        java.nio.file.Files.setPosixFilePermissions(key, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        assertTrue(refusal(signed).contains("can be read by every user"));
        java.nio.file.Files.setPosixFilePermissions(key, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        java.nio.file.Files.write(key, new byte[31]);
        assertTrue(refusal(signed).contains("fewer than 32"));
        assertTrue(refusal(signed.sharedCache("s3://cache", null, null, staging.resolve("absent"))).contains("cannot be read"));
        assertTrue(refusal(mount("data").sharedCache(null, null, null, key)).contains("need --shared-cache"));
    }

    @Test
    void aMountPointMustBeAnExistingDirectory() {
        assertTrue(assertThrows(UsageError.class, () -> new MountConfigBuilder("data", mountPoint.resolve("absent").toString())
                .store(bucket -> null, Duration.ofSeconds(60), 32).build()).getMessage().contains("does not exist"));
    }

    @Test
    void aMountIdIsShortAndStable() {
        assertEquals(MountConfigBuilder.mountId(Path.of("/mnt/a")), MountConfigBuilder.mountId(Path.of("/mnt/a")));
        assertFalse(MountConfigBuilder.mountId(Path.of("/mnt/a")).equals(MountConfigBuilder.mountId(Path.of("/mnt/b"))));
        assertEquals(12, MountConfigBuilder.mountId(Path.of("/mnt/a")).length());
    }
}
