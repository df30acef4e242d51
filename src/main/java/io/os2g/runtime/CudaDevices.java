package io.os2g.runtime;

import io.os2g.staging.CudaDriver;
import io.os2g.staging.GpuRegistration;
import io.os2g.staging.StagingException;
import io.os2g.staging.StagingRegion;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** {@code --gpu DEVICE}: the CUDA driver, opened once per device for this process, and staging regions registered with it. */
final class CudaDevices {

    private static final ConcurrentHashMap<Integer, CudaDriver> OPEN = new ConcurrentHashMap<>();

    private CudaDevices() {
    }

    /** Device {@code ordinal} of the driver ({@code $OS2G_CUDA_LIBRARY} or libcuda.so.1); its absence is the user's to fix. */
    static CudaDriver device(int ordinal) {
        try {
            return OPEN.computeIfAbsent(ordinal, o -> CudaDriver.open(library(), o));
        } catch (StagingException e) {
            throw new UsageError("--gpu " + ordinal + ": " + e.getMessage());
        }
    }

    /** Registers every segment of {@code region} with device {@code ordinal}. */
    static GpuRegistration register(int ordinal, StagingRegion region) {
        CudaDriver cuda = device(ordinal);
        try {
            return GpuRegistration.register(cuda, region, false);
        } catch (StagingException e) {
            throw new UsageError("--gpu " + ordinal + ": " + e.getMessage());
        }
    }

    /** The {@code gpu} part of the stats document. */
    static Map<String, Object> stats(GpuRegistration gpu) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("device", gpu.device().ordinal());
        m.put("name", gpu.device().deviceName());
        m.put("registered_segments", gpu.segments());
        m.put("registered_bytes", gpu.bytes());
        return m;
    }

    private static String library() {
        String override = System.getenv("OS2G_CUDA_LIBRARY");
        return override != null && !override.isBlank() ? override : CudaDriver.LIBRARY;
    }
}
