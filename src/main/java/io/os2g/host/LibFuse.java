package io.os2g.host;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/** Where libfuse 3 lives: the runtime library only ({@code libfuse3.so.3}), no -dev package needed. */
public final class LibFuse {

    private static final List<String> DIRECTORIES = List.of(
            "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64", "/lib64", "/usr/lib", "/lib", "/usr/local/lib");

    private LibFuse() {
    }

    public static Optional<Path> find() {
        for (String dir : DIRECTORIES) {
            Path candidate = Path.of(dir, "libfuse3.so.3");
            if (Files.isReadable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }
}
