package io.os2g.staging;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The few CUDA driver API calls (libcuda.so.1, through the FFM API: no JNI, no CUDA toolkit at build
 * time) that make staging memory page-locked and visible to one GPU: {@code cuMemHostRegister} in
 * that device's primary context. Nothing here runs unless a mount or agent is given {@code --gpu}.
 */
public final class CudaDriver {

    /** The driver's soname; {@code OS2G_CUDA_LIBRARY} names another file (a driver outside the loader's path). */
    public static final String LIBRARY = "libcuda.so.1";

    private static final int CU_MEMHOSTREGISTER_PORTABLE = 0x01;
    private static final int CU_MEMHOSTREGISTER_DEVICEMAP = 0x02;
    private static final int CU_MEMHOSTREGISTER_READ_ONLY = 0x08;
    private static final int NAME_LENGTH = 256;

    private final MethodHandle cuCtxSetCurrent;
    private final MethodHandle cuMemHostRegister;
    private final MethodHandle cuMemHostUnregister;
    private final MethodHandle cuGetErrorName;
    private final int ordinal;
    private final MemorySegment context;
    private final String deviceName;

    private CudaDriver(SymbolLookup driver, int ordinal) {
        Linker linker = Linker.nativeLinker();
        MethodHandle cuInit = function(linker, driver, "cuInit", ValueLayout.JAVA_INT);
        MethodHandle cuDeviceGetCount = function(linker, driver, "cuDeviceGetCount", ValueLayout.ADDRESS);
        MethodHandle cuDeviceGet = function(linker, driver, "cuDeviceGet", ValueLayout.ADDRESS, ValueLayout.JAVA_INT);
        MethodHandle cuDeviceGetName = function(linker, driver, "cuDeviceGetName", ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT);
        MethodHandle cuDevicePrimaryCtxRetain = function(linker, driver, "cuDevicePrimaryCtxRetain", ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT);
        this.cuCtxSetCurrent = function(linker, driver, "cuCtxSetCurrent", ValueLayout.ADDRESS);
        this.cuMemHostRegister = function(linker, driver, "cuMemHostRegister_v2", ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_INT);
        this.cuMemHostUnregister = function(linker, driver, "cuMemHostUnregister", ValueLayout.ADDRESS);
        this.cuGetErrorName = function(linker, driver, "cuGetErrorName", ValueLayout.JAVA_INT, ValueLayout.ADDRESS);
        this.ordinal = ordinal;
        try (Arena call = Arena.ofConfined()) {
            check((int) cuInit.invokeExact(0), "cuInit");
            MemorySegment count = call.allocate(ValueLayout.JAVA_INT);
            check((int) cuDeviceGetCount.invokeExact(count), "cuDeviceGetCount");
            int devices = count.get(ValueLayout.JAVA_INT, 0);
            if (ordinal < 0 || ordinal >= devices) {
                throw new StagingException("no CUDA device " + ordinal + " (this machine has " + devices + ")");
            }
            MemorySegment device = call.allocate(ValueLayout.JAVA_INT);
            check((int) cuDeviceGet.invokeExact(device, ordinal), "cuDeviceGet");
            int handle = device.get(ValueLayout.JAVA_INT, 0);
            MemorySegment name = call.allocate(NAME_LENGTH);
            check((int) cuDeviceGetName.invokeExact(name, NAME_LENGTH, handle), "cuDeviceGetName");
            this.deviceName = name.getString(0);
            MemorySegment context = call.allocate(ValueLayout.ADDRESS);
            check((int) cuDevicePrimaryCtxRetain.invokeExact(context, handle), "cuDevicePrimaryCtxRetain");
            this.context = context.get(ValueLayout.ADDRESS, 0);
        } catch (StagingException e) {
            throw e;
        } catch (Throwable t) {
            throw new StagingException("CUDA driver call failed: " + t, t);
        }
    }

    /**
     * Loads the driver and takes device {@code ordinal}'s primary context.
     *
     * @param library the driver: {@link #LIBRARY}, found the way the dynamic loader finds libraries, or a path
     * @throws StagingException with one line saying what is missing: no driver, no such device, a failing call
     */
    public static CudaDriver open(String library, int ordinal) {
        SymbolLookup driver;
        try {
            driver = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            throw new StagingException("no CUDA driver: cannot load " + library + " (install the NVIDIA driver, or set "
                    + "OS2G_CUDA_LIBRARY to its libcuda.so.1)", e);
        }
        return new CudaDriver(driver, ordinal);
    }

    public int ordinal() {
        return ordinal;
    }

    public String deviceName() {
        return deviceName;
    }

    /**
     * Page-locks {@code memory} and maps it for the device ({@code cuMemHostRegister}, portable to every
     * context). {@code readOnly} for a mapping this process only reads.
     */
    public void register(MemorySegment memory, boolean readOnly) {
        int flags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | (readOnly ? CU_MEMHOSTREGISTER_READ_ONLY : 0);
        try {
            check((int) cuCtxSetCurrent.invokeExact(context), "cuCtxSetCurrent");
            check((int) cuMemHostRegister.invokeExact(memory, memory.byteSize(), flags), "cuMemHostRegister");
        } catch (StagingException e) {
            throw e;
        } catch (Throwable t) {
            throw new StagingException("cuMemHostRegister failed: " + t, t);
        }
    }

    /** Undoes {@link #register}; memory must be unregistered before it is unmapped. */
    public void unregister(MemorySegment memory) {
        try {
            check((int) cuCtxSetCurrent.invokeExact(context), "cuCtxSetCurrent");
            check((int) cuMemHostUnregister.invokeExact(memory), "cuMemHostUnregister");
        } catch (StagingException e) {
            throw e;
        } catch (Throwable t) {
            throw new StagingException("cuMemHostUnregister failed: " + t, t);
        }
    }

    private void check(int result, String call) throws Throwable {
        if (result == 0) {
            return;
        }
        String name = "CUresult " + result;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment text = arena.allocate(ValueLayout.ADDRESS);
            if ((int) cuGetErrorName.invokeExact(result, text) == 0) {
                name = text.get(ValueLayout.ADDRESS, 0).reinterpret(NAME_LENGTH).getString(0);
            }
        }
        throw new StagingException(call + " failed: " + name + (result == 100 ? " (no CUDA-capable device is visible)" : ""));
    }

    private static MethodHandle function(Linker linker, SymbolLookup driver, String name, ValueLayout... arguments) {
        MemorySegment symbol = driver.find(name)
                .orElseThrow(() -> new StagingException("the CUDA driver has no " + name + ": too old a driver"));
        return linker.downcallHandle(symbol, FunctionDescriptor.of(ValueLayout.JAVA_INT, arguments));
    }
}
