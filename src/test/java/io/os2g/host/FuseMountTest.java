package io.os2g.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.os2g.fuse.FakeKernel;
import io.os2g.fuse.FuseErrno;
import io.os2g.fuse.FuseFileSystem;
import io.os2g.fuse.FuseSession;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A mount whose kernel is too old for os2g is refused at INIT with one line (exit 2), not left dead. */
@Tag("unit")
class FuseMountTest {

    @TempDir
    Path dir;

    @Test
    void aKernelBelowTheOldestMinorIsRefusedWithOneLineNamingBoth() throws Exception {
        FuseMount mount = new FuseMount(dir, List.of());
        try (FakeKernel kernel = new FakeKernel()) {
            CompletableFuture<Void> served = CompletableFuture.runAsync(() -> mount.serve(kernel.device(), new NothingFs(),
                    FuseSession.Timeouts.forever(), device -> { }));
            kernel.send(26 /* INIT */, 2, 0, FakeKernel.init(7, 19, 131072, 1, 0));
            assertEquals(-FuseErrno.EPROTO, kernel.receive(Duration.ofSeconds(5)).error());
            Throwable failure = assertThrows(java.util.concurrent.ExecutionException.class, () -> served.get(30, java.util.concurrent.TimeUnit.SECONDS)).getCause();
            FuseMount.MountException refused = (FuseMount.MountException) failure;
            assertEquals("mount at " + dir + " failed: the kernel speaks FUSE protocol 7.19; os2g needs 7.22 or later (Linux 3.10, RHEL 7)",
                    refused.getMessage());
        }
    }

    /** A file system nothing is asked of. */
    private static final class NothingFs implements FuseFileSystem {
        @Override
        public Attributes lookup(long parent, String name) {
            throw new IllegalStateException();
        }

        @Override
        public Attributes getattr(long node, long handle) {
            throw new IllegalStateException();
        }

        @Override
        public Opened open(long node, int flags) {
            throw new IllegalStateException();
        }

        @Override
        public void read(long node, long handle, long offset, int size, io.os2g.fuse.ReadReply reply) {
            throw new IllegalStateException();
        }

        @Override
        public void release(long node, long handle) {
        }

        @Override
        public List<Entry> list(long directory) {
            return List.of();
        }
    }
}
