package io.os2g.staging;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * A staging region's segments registered with one GPU ({@code --gpu}): each segment is mapped whole
 * in this process and page-locked with {@code cuMemHostRegister}, so its pages stay resident and the
 * device can DMA them. Registering commits the whole region's memory at once (it is otherwise taken
 * as pages are first written); the preflight has checked that there is room. Closed before its region.
 */
public final class GpuRegistration implements AutoCloseable {

    private final CudaDriver cuda;
    private final Arena arena = Arena.ofShared();
    private final List<MemorySegment> registered = new ArrayList<>();
    private long bytes;

    private GpuRegistration(CudaDriver cuda) {
        this.cuda = cuda;
    }

    /** Registers every segment of {@code region}; {@code readOnly} where this process only reads them. */
    public static GpuRegistration register(CudaDriver cuda, StagingRegion region, boolean readOnly) {
        GpuRegistration registration = new GpuRegistration(cuda);
        try {
            for (Path file : region.segmentFiles()) {
                registration.add(file, readOnly);
            }
            return registration;
        } catch (RuntimeException e) {
            registration.close();
            throw e;
        }
    }

    private void add(Path file, boolean readOnly) {
        MemorySegment memory;
        try (FileChannel channel = readOnly ? FileChannel.open(file, StandardOpenOption.READ)
                : FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            memory = channel.map(readOnly ? FileChannel.MapMode.READ_ONLY : FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena);
        } catch (IOException e) {
            throw new StagingException("cannot map staging segment " + file + " for the GPU: " + e.getMessage(), e);
        }
        cuda.register(memory, readOnly);
        registered.add(memory);
        bytes += memory.byteSize();
    }

    public CudaDriver device() {
        return cuda;
    }

    public int segments() {
        return registered.size();
    }

    public long bytes() {
        return bytes;
    }

    /** Unregisters and unmaps the segments. */
    @Override
    public void close() {
        for (MemorySegment memory : registered) {
            try {
                cuda.unregister(memory);
            } catch (StagingException e) {
                // the driver is going away with the process: the mapping is dropped below either way
            }
        }
        registered.clear();
        arena.close();
    }
}
