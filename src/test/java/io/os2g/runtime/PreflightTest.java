package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.staging.StagingConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class PreflightTest {

    @TempDir
    Path tmp;

    @Test
    void stagingLargerThanItsFileSystemHasRoomForIsRefused() throws Exception {
        long free = Files.getFileStore(tmp).getUsableSpace();
        StagingConfig tooBig = StagingConfig.of(tmp.resolve("a/b/staging"), free + (1L << 30), Duration.ofSeconds(1));
        UsageError e = assertThrows(UsageError.class, () -> Preflight.stagingFits(tooBig));
        assertTrue(e.getMessage().contains("--staging-size") && e.getMessage().contains("free"), e.getMessage());
        Preflight.stagingFits(StagingConfig.of(tmp.resolve("a/b/staging"), 1 << 20, Duration.ofSeconds(1)));
    }

    @Test
    void endpointsThatAreNotHttpUrlsAreRefused() {
        for (String bad : new String[] {"not a url", "ftp://host", "http://", "https://host/path", "host:9000"}) {
            assertThrows(UsageError.class, () -> Preflight.endpoint(bad), bad);
        }
        Preflight.endpoint("https://s3.example.com");
        Preflight.endpoint("http://127.0.0.1:9000/");
    }

    @Test
    void freeSpaceReadsAsPeopleWriteIt() {
        assertEquals("0 bytes", Sizes.approximate(0));
        assertEquals("1.0K", Sizes.approximate(1024));
        assertEquals("117.7M", Sizes.approximate(123_456_789));
        assertEquals("3.0G", Sizes.approximate(3L << 30));
    }
}
