package io.os2g.codec;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class TarIndexTest {

    private static final String LONG_NAME = "deep/" + "n".repeat(150) + "/" + "m".repeat(120) + ".jpg";

    /** A tar of {@code files} (path -> bytes) written with {@code longNames} (GNU or POSIX) headers. */
    private static byte[] tar(Map<String, byte[]> files, int longNames, List<String> directories, boolean withSymlink)
            throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
            out.setLongFileMode(longNames);
            for (String dir : directories) {
                out.putArchiveEntry(new TarArchiveEntry(dir + "/"));
                out.closeArchiveEntry();
            }
            if (withSymlink) {
                TarArchiveEntry link = new TarArchiveEntry("link.jpg", TarConstants.LF_SYMLINK);
                link.setLinkName("a/b/one.jpg");
                out.putArchiveEntry(link);
                out.closeArchiveEntry();
            }
            for (Map.Entry<String, byte[]> f : files.entrySet()) {
                TarArchiveEntry entry = new TarArchiveEntry(f.getKey());
                entry.setSize(f.getValue().length);
                entry.setModTime(1_700_000_000_000L);
                out.putArchiveEntry(entry);
                out.write(f.getValue());
                out.closeArchiveEntry();
            }
        }
        return bytes.toByteArray();
    }

    private static byte[] bytes(int length, int seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** A source over {@code tar} that counts the bytes it was asked for. */
    private static RangeSource source(byte[] tar, AtomicLong read) {
        return (position, target, offset, length) -> {
            read.addAndGet(length);
            System.arraycopy(tar, (int) position, target, offset, length);
        };
    }

    private static byte[] member(byte[] tar, TarIndex.Member m) {
        return Arrays.copyOfRange(tar, (int) m.dataOffset(), (int) (m.dataOffset() + m.size()));
    }

    private static Map<String, byte[]> sample() {
        Map<String, byte[]> files = new LinkedHashMap<>();
        files.put("a/b/one.jpg", bytes(1000, 1));
        files.put("a/two.jpg", bytes(513, 2));
        files.put("./top.txt", bytes(512, 3));
        files.put("empty", new byte[0]);
        files.put(LONG_NAME, bytes(70_000, 4));
        files.put("../escape.txt", bytes(10, 5));
        return files;
    }

    @Test
    void gnuAndPaxLongNamesNestedDirectoriesAndEmptyFilesMapToTheirBytes() throws IOException {
        for (int longNames : new int[] {TarArchiveOutputStream.LONGFILE_GNU, TarArchiveOutputStream.LONGFILE_POSIX}) {
            Map<String, byte[]> files = sample();
            byte[] tar = tar(files, longNames, List.of("a", "empty-dir/inner"), true);
            TarIndex index = TarIndex.fromHeaders(source(tar, new AtomicLong()), tar.length);

            for (Map.Entry<String, byte[]> f : files.entrySet()) {
                if (f.getKey().startsWith("..")) {
                    continue;
                }
                TarIndex.Member m = index.file(TarIndex.normalise(f.getKey()));
                assertNotNull(m, f.getKey());
                assertArrayEquals(f.getValue(), member(tar, m), f.getKey());
                assertEquals(1_700_000_000_000L, m.mtimeMillis());
                assertFalse(m.truncated());
            }
            assertEquals(5, index.fileCount(), () -> "files: " + index.level("").files().keySet() + " dirs: " + index.level("").directories());
            assertEquals(2, index.skipped(), "the symlink and the member climbing out with ..");
            assertNull(index.problem());
            assertEquals(List.of("a", "deep", "empty-dir"), index.level("").directories());
            assertEquals(List.of("empty", "top.txt"), List.copyOf(index.level("").files().keySet()));
            assertEquals(List.of("b"), index.level("a/").directories());
            assertEquals(List.of("two.jpg"), List.copyOf(index.level("a/").files().keySet()));
            assertEquals(List.of("inner"), index.level("empty-dir/").directories());
            assertTrue(index.level("empty-dir/inner/").files().isEmpty());
            assertNull(index.level("nowhere/"));
        }
    }

    @Test
    void largeMembersCostOneSmallReadPerHeaderNotTheirBytes() throws IOException {
        Map<String, byte[]> files = new LinkedHashMap<>();
        for (int i = 0; i < 6; i++) {
            files.put("big-" + i + ".bin", bytes(5 << 20, i));
        }
        byte[] tar = tar(files, TarArchiveOutputStream.LONGFILE_GNU, List.of(), false);
        AtomicLong read = new AtomicLong();
        TarIndex index = TarIndex.fromHeaders(source(tar, read), tar.length);
        assertEquals(6, index.fileCount());
        assertArrayEquals(files.get("big-5.bin"), member(tar, index.file("big-5.bin")));
        assertTrue(read.get() < tar.length / 8, "read " + read.get() + " of " + tar.length + " bytes");
    }

    @Test
    void aLaterMemberOfTheSamePathReplacesTheEarlierOne() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
            for (int version = 1; version <= 2; version++) {
                TarArchiveEntry entry = new TarArchiveEntry("same.txt");
                entry.setSize(1);
                out.putArchiveEntry(entry);
                out.write(version);
                out.closeArchiveEntry();
            }
        }
        byte[] tar = bytes.toByteArray();
        TarIndex index = TarIndex.fromHeaders(source(tar, new AtomicLong()), tar.length);
        assertArrayEquals(new byte[] {2}, member(tar, index.file("same.txt")));
    }

    @Test
    void aTruncatedTarKeepsItsMembersAndMarksTheCutOne() throws IOException {
        Map<String, byte[]> files = new LinkedHashMap<>();
        files.put("first.bin", bytes(10_000, 1));
        files.put("second.bin", bytes(10_000, 2));
        byte[] whole = tar(files, TarArchiveOutputStream.LONGFILE_GNU, List.of(), false);
        byte[] tar = Arrays.copyOf(whole, 512 + 10_240 + 512 + 4_000); // in the middle of second.bin's data
        TarIndex index = TarIndex.fromHeaders(source(tar, new AtomicLong()), tar.length);
        assertFalse(index.file("first.bin").truncated());
        assertArrayEquals(files.get("first.bin"), member(tar, index.file("first.bin")));
        assertTrue(index.file("second.bin").truncated());
    }

    @Test
    void aCorruptHeaderKeepsTheMembersBeforeItAndSaysWhy() throws IOException {
        Map<String, byte[]> files = new LinkedHashMap<>();
        for (int i = 0; i < 4; i++) {
            files.put("m" + i + ".bin", bytes(1000, i));
        }
        byte[] tar = tar(files, TarArchiveOutputStream.LONGFILE_GNU, List.of(), false);
        // the third header (each member: one header record and two data records) becomes garbage
        byte[] garbage = "this is not a tar header at all, it is text".repeat(12).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(garbage, 0, tar, 2 * 1536, 512);
        TarIndex index = TarIndex.fromHeaders(source(tar, new AtomicLong()), tar.length);
        assertNotNull(index.problem());
        assertArrayEquals(files.get("m0.bin"), member(tar, index.file("m0.bin")));
        assertArrayEquals(files.get("m1.bin"), member(tar, index.file("m1.bin")));
        assertNull(index.file("m2.bin"));
    }

    @Test
    void aFailingSourceFailsTheWalkInsteadOfShorteningTheIndex() throws IOException {
        byte[] tar = tar(sample(), TarArchiveOutputStream.LONGFILE_GNU, List.of(), false);
        RangeSource failing = (position, target, offset, length) -> {
            throw new IOException("connection reset");
        };
        assertEquals("connection reset", assertThrows(IOException.class, () -> TarIndex.fromHeaders(failing, tar.length)).getMessage());
        RangeSource failingRuntime = (position, target, offset, length) -> {
            throw new IllegalStateException("store unavailable");
        };
        assertThrows(IllegalStateException.class, () -> TarIndex.fromHeaders(failingRuntime, tar.length));
    }

    @Test
    void theSidecarRoundTripsAndIsRefusedWhenStaleOrMalformed() throws IOException {
        byte[] tar = tar(sample(), TarArchiveOutputStream.LONGFILE_POSIX, List.of("empty-dir"), true);
        TarIndex index = TarIndex.fromHeaders(source(tar, new AtomicLong()), tar.length);
        ByteArrayOutputStream sidecar = new ByteArrayOutputStream();
        index.writeSidecar(sidecar, tar.length, "etag-1");

        TarIndex read = TarIndex.readSidecar(new ByteArrayInputStream(sidecar.toByteArray()), tar.length, "etag-1");
        assertEquals(index.fileCount(), read.fileCount());
        assertEquals(index.skipped(), read.skipped());
        assertEquals(index.file(LONG_NAME), read.file(LONG_NAME));
        assertEquals(index.level("").directories(), read.level("").directories());

        assertThrows(IOException.class, () -> TarIndex.readSidecar(new ByteArrayInputStream(sidecar.toByteArray()), tar.length + 512, "etag-1"));
        assertThrows(IOException.class, () -> TarIndex.readSidecar(new ByteArrayInputStream(sidecar.toByteArray()), tar.length, "etag-2"));
        String text = sidecar.toString(StandardCharsets.UTF_8);
        assertThrows(IOException.class, () -> TarIndex.readSidecar(stream(text + "{\"path\":\"x\",\"offset\":3,\"size\":1}\n"), tar.length, ""));
        assertThrows(IOException.class, () -> TarIndex.readSidecar(stream(text + "{\"path\":\"../x\",\"offset\":0,\"size\":1}\n"), tar.length, ""));
        assertThrows(IOException.class, () -> TarIndex.readSidecar(stream(text + "not json\n"), tar.length, ""));
        assertThrows(IOException.class, () -> TarIndex.readSidecar(stream("{\"format\":\"other\"}\n"), tar.length, ""));
    }

    private static ByteArrayInputStream stream(String text) {
        return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
    }
}
