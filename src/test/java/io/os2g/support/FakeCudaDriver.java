package io.os2g.support;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * src/test/c/fake_libcuda.c built into a libcuda.so.1 (with gcc), and its test controls: the CUDA
 * driver's calls os2g makes, on machines without a GPU.
 */
public final class FakeCudaDriver {

    private static Path built;

    private final SymbolLookup library;

    private FakeCudaDriver(Path path) {
        this.library = SymbolLookup.libraryLookup(path, Arena.global());
    }

    /** Builds the fake once per JVM; the same library (and its counters) for every caller. */
    public static synchronized FakeCudaDriver build() throws IOException, InterruptedException {
        if (built == null) {
            Path dir = Files.createTempDirectory("os2g-fake-cuda");
            Path so = dir.resolve("libcuda.so.1");
            Process gcc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O1", "-o", so.toString(),
                    Path.of("src/test/c/fake_libcuda.c").toAbsolutePath().toString()).inheritIO().start();
            if (gcc.waitFor() != 0) {
                throw new IOException("gcc could not build the fake CUDA driver");
            }
            built = so;
        }
        return new FakeCudaDriver(built);
    }

    public Path path() {
        return built;
    }

    public void setDevices(int n) {
        call("fake_set_devices", n);
    }

    public void setInitError(int cuResult) {
        call("fake_set_init_error", cuResult);
    }

    public long registeredBytes() {
        return (long) invoke("fake_registered_bytes", FunctionDescriptor.of(ValueLayout.JAVA_LONG));
    }

    public int registeredCount() {
        return (int) invoke("fake_registered_count", FunctionDescriptor.of(ValueLayout.JAVA_INT));
    }

    public int lastFlags() {
        return (int) invoke("fake_last_flags", FunctionDescriptor.of(ValueLayout.JAVA_INT));
    }

    private void call(String name, int argument) {
        MethodHandle f = Linker.nativeLinker().downcallHandle(library.find(name).orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
        try {
            f.invokeExact(argument);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private Object invoke(String name, FunctionDescriptor descriptor) {
        MethodHandle f = Linker.nativeLinker().downcallHandle(library.find(name).orElseThrow(), descriptor);
        try {
            return f.invoke();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
