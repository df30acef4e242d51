package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.os2g.agent.AgentConfig;
import io.os2g.support.S3Fixture;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.UserDefinedFileAttributeView;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.gaul.s3proxy.junit.S3ProxyExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Staged extents through a real mount: {@code user.os2g.extents} of an open file and the
 * {@code /.os2g/extents} query name segment files and offsets whose bytes are the file's, and they
 * stay so while the lease holds, however much else is read.
 */
@Tag("fuse")
class ExtentLeaseMountTest {

    private static final int CHUNK = 64 * 1024;
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    final S3ProxyExtension proxy = S3Fixture.newProxy();

    @TempDir
    Path tmp;

    private Gateway gateway;
    private Path mnt;
    private final byte[] small = S3Fixture.bytes(1000, 1);
    private final byte[] multi = S3Fixture.bytes(5 * CHUNK + 3, 2);
    private final byte[] large = S3Fixture.bytes(9 * CHUNK, 3);

    @BeforeEach
    void mount() throws Exception {
        S3Fixture s3 = new S3Fixture(proxy).bucket("data");
        s3.put("data", "small.bin", small).put("data", "multi.bin", multi).put("data", "large.bin", large)
                .put("data", "empty.bin", new byte[0]);
        for (int i = 0; i < 24; i++) {
            s3.put("data", "other/" + i + ".bin", S3Fixture.bytes(2 * CHUNK, 100 + i));
        }
        mnt = Files.createDirectory(tmp.resolve("mnt"));
        gateway = TestMounts.mount(s3, tmp, mnt, "128K", 0, AgentConfig.DEFAULT_MAX_IN_FLIGHT);
    }

    @AfterEach
    void unmount() {
        if (gateway != null) {
            gateway.close();
        }
    }

    private static byte[] mapped(JsonNode lease) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (JsonNode e : lease.get("extents")) {
            try (FileChannel segment = FileChannel.open(Path.of(e.get(0).asText()))) {
                ByteBuffer bytes = segment.map(FileChannel.MapMode.READ_ONLY, e.get(1).asLong(), e.get(2).asLong());
                byte[] copy = new byte[bytes.remaining()];
                bytes.get(copy);
                out.writeBytes(copy);
            }
        }
        return out.toByteArray();
    }

    private JsonNode xattr(Path file) throws Exception {
        UserDefinedFileAttributeView view = Files.getFileAttributeView(file, UserDefinedFileAttributeView.class);
        ByteBuffer value = ByteBuffer.allocate(view.size("os2g.extents"));
        view.read("os2g.extents", value);
        return JSON.readTree(new String(value.array(), 0, value.position(), StandardCharsets.UTF_8));
    }

    private long pinnedChunks() throws Exception {
        Map<String, Object> stats = io.os2g.metrics.Stats.parse(Files.readString(mnt.resolve(".os2g/stats")));
        return ((Number) ((Map<?, ?>) ((Map<?, ?>) stats.get("agent")).get("staging")).get("pinned_chunks")).longValue();
    }

    /**
     * The pin count once it reaches {@code expected}, or what it is after 10 s: close(2) returns before
     * FUSE delivers its RELEASE (through its background queue), so a lease ends shortly after the last
     * descriptor closes; a read's own pins go shortly after it returns.
     */
    private long pinnedChunksOnceReleased(long expected) throws Exception {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        long pinned = pinnedChunks();
        while (pinned != expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
            pinned = pinnedChunks();
        }
        return pinned;
    }

    private void awaitOpenFiles(long expected) throws Exception {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        long open;
        while ((open = ((Number) io.os2g.metrics.Stats.parse(Files.readString(mnt.resolve(".os2g/stats"))).get("open_files")).longValue())
                != expected && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(expected, open, "files open in the mount");
    }

    private void readEverythingElse() throws Exception {
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 24; i++) {
                Files.readAllBytes(mnt.resolve("other/" + i + ".bin")); // 3 MiB through a 1 MiB region
            }
        }
    }

    @Test
    void anOpenFilesExtentsHoldItsBytesUntilItIsClosed() throws Exception {
        Path file = mnt.resolve("multi.bin");
        assertTrue(Files.getFileAttributeView(file, UserDefinedFileAttributeView.class).list().contains("os2g.extents"));
        try (FileChannel open = FileChannel.open(file)) {
            JsonNode lease = xattr(file);
            assertEquals(multi.length, lease.get("size").asLong());
            assertTrue(lease.get("extents").size() >= 1);
            assertArrayEquals(multi, mapped(lease));
            assertEquals(6, pinnedChunks(), "every chunk of the file pinned");
            readEverythingElse();
            assertArrayEquals(multi, mapped(lease), "the lease kept the pages from being reused");
            assertEquals(lease, xattr(file), "asking again gives the same lease");
            try (FileChannel second = FileChannel.open(file)) {
                assertEquals(lease, xattr(file));
            }
            awaitOpenFiles(1); // the second descriptor's RELEASE has arrived
            assertEquals(6, pinnedChunksOnceReleased(6), "another descriptor closing does not end the lease");
            assertEquals(small.length, Files.readAllBytes(mnt.resolve("small.bin")).length);
        }
        assertEquals(0, pinnedChunksOnceReleased(0), "closing the file ended the lease");
    }

    /** getxattr(2) by path, with no descriptor open (Java's own API opens the file around the call): the errno, or 0. */
    private static int getxattrErrno(Path file) throws Throwable {
        Linker linker = Linker.nativeLinker();
        StructLayout errnoState = Linker.Option.captureStateLayout();
        MethodHandle getxattr = linker.downcallHandle(linker.defaultLookup().find("getxattr").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG),
                Linker.Option.captureCallState("errno"));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(errnoState);
            long n = (long) getxattr.invokeExact(state, arena.allocateFrom(file.toString()), arena.allocateFrom("user.os2g.extents"),
                    MemorySegment.NULL, 0L);
            return n >= 0 ? 0 : (int) errnoState.varHandle(MemoryLayout.PathElement.groupElement("errno")).get(state, 0L);
        }
    }

    @Test
    void aFileNobodyHasOpenHasNoExtentsAndTheEmptyFileHasNone() throws Throwable {
        assertEquals(61, getxattrErrno(mnt.resolve("small.bin")), "ENODATA: no descriptor to hold a lease");
        try (FileChannel open = FileChannel.open(mnt.resolve("small.bin"))) {
            assertEquals(0, getxattrErrno(mnt.resolve("small.bin")), "by path, while a descriptor is open");
        }
        assertEquals(0, pinnedChunksOnceReleased(0));
        try (FileChannel open = FileChannel.open(mnt.resolve("empty.bin"))) {
            JsonNode lease = xattr(mnt.resolve("empty.bin"));
            assertEquals(0, lease.get("size").asLong());
            assertEquals(0, lease.get("extents").size());
        }
    }

    @Test
    void theControlQueryLeasesManyFilesAndSaysWhyItCannotLeaseOthers() throws Exception {
        List<JsonNode> answers = new ArrayList<>();
        try (FileChannel query = FileChannel.open(mnt.resolve(".os2g/extents"), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            query.write(ByteBuffer.wrap("small.bin\n/multi.bin\nmissing.bin\nother\nlarge.bin\n../x\n".getBytes(StandardCharsets.UTF_8)));
            ByteBuffer text = ByteBuffer.allocate(1 << 16);
            query.read(text, 0);
            for (String line : new String(text.array(), 0, text.position(), StandardCharsets.UTF_8).split("\n")) {
                answers.add(JSON.readTree(line));
            }
            assertEquals(6, answers.size());
            assertEquals("small.bin", answers.get(0).get("path").asText());
            assertArrayEquals(small, mapped(answers.get(0)));
            assertArrayEquals(multi, mapped(answers.get(1)));
            assertEquals("ENOENT", answers.get(2).get("error").asText());
            assertEquals("EINVAL", answers.get(3).get("error").asText(), "a directory");
            assertEquals("EFBIG", answers.get(4).get("error").asText(), "more than half the region");
            assertEquals("EINVAL", answers.get(5).get("error").asText());
            readEverythingElse();
            assertArrayEquals(multi, mapped(answers.get(1)));
            // the leases' 7, once the last reads' own pins (a splice's, until the kernel took the pages) are let go
            assertEquals(7, pinnedChunksOnceReleased(7));
        }
        assertEquals(0, pinnedChunksOnceReleased(0));
        assertThrows(java.nio.file.AccessDeniedException.class, () -> Files.readString(mnt.resolve(".os2g/extents")),
                "read-only opens are refused: the query takes paths");
    }
}
