package io.os2g.staging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.os2g.support.FakeCudaDriver;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The FFM binding of the CUDA driver: absent, failing, and (through a stand-in driver) registering a region. */
@Tag("unit")
class CudaDriverTest {

    @TempDir
    Path tmp;

    private FakeCudaDriver fake;

    @BeforeEach
    void fake() throws Exception {
        fake = FakeCudaDriver.build();
        fake.setDevices(1);
        fake.setInitError(0);
    }

    @AfterEach
    void nothingLeftRegistered() {
        assertEquals(0, fake.registeredCount());
    }

    @Test
    void withoutADriverTheErrorSaysWhatToInstall() {
        StagingException e = assertThrows(StagingException.class,
                () -> CudaDriver.open(tmp.resolve("nowhere/libcuda.so.1").toString(), 0));
        assertEquals("no CUDA driver: cannot load " + tmp.resolve("nowhere/libcuda.so.1")
                + " (install the NVIDIA driver, or set OS2G_CUDA_LIBRARY to its libcuda.so.1)", e.getMessage());
    }

    @Test
    void aDriverWithoutThatDeviceOrWithoutAnyIsRefusedByName() {
        StagingException missing = assertThrows(StagingException.class, () -> CudaDriver.open(fake.path().toString(), 1));
        assertEquals("no CUDA device 1 (this machine has 1)", missing.getMessage());
        fake.setInitError(100);
        StagingException none = assertThrows(StagingException.class, () -> CudaDriver.open(fake.path().toString(), 0));
        assertEquals("cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is visible)", none.getMessage());
    }

    @Test
    void everySegmentOfARegionIsRegisteredWholeAndUnregisteredOnClose() {
        CudaDriver cuda = CudaDriver.open(fake.path().toString(), 0);
        assertEquals("os2g fake GPU", cuda.deviceName());
        StagingConfig config = new StagingConfig(tmp.resolve("staging"), 3L << 20, StagingConfig.DEFAULT_PAGE_SIZE, 1L << 20,
                Duration.ofSeconds(1));
        try (StagingRegion region = StagingRegion.create(config)) {
            try (GpuRegistration gpu = GpuRegistration.register(cuda, region, false)) {
                assertEquals(3, gpu.segments());
                assertEquals(3L << 20, gpu.bytes());
                assertEquals(3, fake.registeredCount());
                assertEquals(3L << 20, fake.registeredBytes());
                assertEquals(0x03, fake.lastFlags(), "portable and device-mapped");
            }
            assertEquals(0, fake.registeredCount());
            try (GpuRegistration readOnly = GpuRegistration.register(cuda, region, true)) {
                assertEquals(0x0b, fake.lastFlags(), "a shim's read-only mapping");
            }
        }
    }
}
