package io.os2g.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.runtime.MountConfig;
import io.os2g.runtime.UsageError;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/** fstab-style {@code -o} lists, as mount(8) hands them to mount.fuse.os2g, mapped onto os2g mount's options. */
@Tag("unit")
class FstabOptionsTest {

    private static final CommandSpec MOUNT = new CommandLine(new MountCommand()).getCommandSpec();

    @TempDir
    Path tmp;

    private static String[] expand(String... args) {
        return FstabOptions.expand(args, MOUNT);
    }

    @Test
    void anFstabLineBecomesTheSameCommandLine() {
        assertArrayEquals(new String[] {"mount", "data/train", "/mnt/data", "--daemon",
                        "--endpoint", "http://minio:9000", "--metadata-ttl", "forever", "--staging-size", "8G",
                        "--expand-tar", "--credentials-file", "/etc/os2g/credentials", "-o", "allow_other"},
                expand("mount", "data/train", "/mnt/data", "--daemon", "-o",
                        "rw,endpoint=http://minio:9000,metadata_ttl=forever,staging_size=8G,allow_other,_netdev,nofail,"
                                + "x-systemd.automount,x-systemd.mount-timeout=30,noatime,nodev,nosuid,defaults,expand_tar,"
                                + "credentials_file=/etc/os2g/credentials"));
    }

    @Test
    void severalListsJoinedFormsAndDashesAreAccepted() {
        assertArrayEquals(new String[] {"mount", "b", "/m", "--staging-size", "2G", "--max-fetches", "64", "-o", "allow_other,max_read=131072"},
                expand("mount", "b", "/m", "-oallow_other", "-o", "staging-size=2G", "-o", "max_fetches=64,max_read=131072"));
        assertArrayEquals(new String[] {"mount", "b", "/m"}, expand("mount", "b", "/m", "-o", "_netdev,nofail"));
    }

    @Test
    void aFlagGivenAValueOrAnOptionWithoutOneIsRefusedClearly() {
        assertEquals("-o decompress takes no value: decompress=yes",
                assertThrows(UsageError.class, () -> expand("mount", "b", "/m", "-o", "decompress=yes")).getMessage());
        assertEquals("-o staging_size needs a value (staging_size=SIZE|auto)",
                assertThrows(UsageError.class, () -> expand("mount", "b", "/m", "-o", "staging_size")).getMessage());
        assertEquals(Os2g.USAGE, Os2g.run("mount", "b", tmp.toString(), "-o", "endpoint="));
    }

    @Test
    void theExpandedLineConfiguresTheMountLikeItsLongOptions() {
        MountCommand command = MountCommand.parse(expand("data/train", tmp.toString(), "-o",
                "no_sign_request,endpoint=http://127.0.0.1:9,metadata_ttl=forever,staging_size=8G,chunk_size=1M,"
                        + "uid=1234,file_mode=0440,allow_other,metrics_port=127.0.0.1:9464,log_file=/var/log/os2g.log,_netdev"));
        MountConfig config = command.config();
        assertNull(config.metadataTtl(), "forever");
        assertEquals(8L << 30, config.staging().capacity());
        assertEquals(1 << 20, config.agent().chunkSize());
        assertEquals(1234, config.fs().uid());
        assertEquals(0440, config.fs().fileMode());
        assertEquals(9464, config.metricsAddress().getPort());
        assertEquals(Path.of("/var/log/os2g.log"), command.service.logFile);
        assertTrue(config.fuseOptions().contains("allow_other"));
        assertEquals(List.of(), config.fuseOptions().stream().filter(o -> o.startsWith("_netdev") || o.contains("=http")).toList());
    }

    // metrics were served on every interface when no address was given
    @Test
    void metricsListenOnLoopbackUnlessAnAddressIsGiven() {
        MountCommand command = MountCommand.parse(expand("data", tmp.toString(), "-o",
                "no_sign_request,endpoint=http://127.0.0.1:9,metrics_port=9464"));
        assertTrue(command.config().metricsAddress().getAddress().isLoopbackAddress());
        command = MountCommand.parse(expand("data", tmp.toString(), "-o",
                "no_sign_request,endpoint=http://127.0.0.1:9,metrics_port=0.0.0.0:9464"));
        assertTrue(command.config().metricsAddress().getAddress().isAnyLocalAddress());
    }
}
