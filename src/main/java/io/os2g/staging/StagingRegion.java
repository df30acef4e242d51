package io.os2g.staging;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

/**
 * The segment files of one staging directory, each mapped read-write once for the life of the region.
 * Pages are numbered across segments: page {@code p} lives in segment {@code p / pagesPerSegment}.
 * Closing unmaps every segment at once (one shared {@link Arena}) and removes the directory.
 */
public final class StagingRegion implements AutoCloseable {

    /** Pages populated per madvise: 16 MiB of 64 KiB pages, two 8 MiB chunks. */
    private static final int POPULATE_BATCH_BYTES = 16 << 20;

    private final StagingConfig config;
    private final StagingDirectory directory;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment[] segments;
    private final List<Path> files = new ArrayList<>();
    private final int pageShift;
    private final int pagesPerSegment;
    private final int populateBatchPages;
    /** Pages below this index have their page tables filled; guarded by {@code this}. */
    private int populatedPages;
    private boolean populateUnsupported;

    /** @param directory the claimed directory, whose segments this creates; null to map an agent's existing ones */
    private StagingRegion(StagingConfig config, StagingDirectory directory) throws IOException {
        this.config = config;
        this.directory = directory;
        this.pageShift = Integer.numberOfTrailingZeros(config.pageSize());
        this.pagesPerSegment = config.pagesPerSegment();
        this.populateBatchPages = Math.max(1, POPULATE_BATCH_BYTES / config.pageSize());
        this.segments = new MemorySegment[config.segmentCount()];
        long remaining = (long) config.pageCount() * config.pageSize();
        for (int i = 0; i < segments.length; i++) {
            long size = Math.min(config.segmentSize(), remaining);
            remaining -= size;
            Path file = config.directory().resolve(String.format("segment-%04d", i));
            if (directory != null) {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            } else if (Files.size(file) < size) {
                throw new IOException("segment " + file + " is smaller than the agent said: " + Files.size(file) + " < " + size);
            }
            files.add(file);
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                segments[i] = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            }

        }
    }

    /** Claims the directory, creates and maps the segments. */
    public static StagingRegion create(StagingConfig config) {
        StagingDirectory directory = StagingDirectory.claim(config.directory());
        try {
            return new StagingRegion(config, directory);
        } catch (IOException | RuntimeException e) {
            try {
                directory.remove();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            String reason = e instanceof IOException io ? StagingDirectory.describe(io) : String.valueOf(e.getMessage());
            throw new StagingException("cannot create staging segments in " + config.directory() + ": " + reason, e);
        }
    }

    /** Maps the segments another process created in {@code config.directory()} (a shim reading an agent's region). */
    static StagingRegion attach(StagingConfig config) {
        try {
            return new StagingRegion(config, null);
        } catch (IOException e) {
            throw new StagingException("cannot map staging segments in " + config.directory() + ": " + StagingDirectory.describe(e), e);
        }
    }

    Arena arena() {
        return arena;
    }

    /**
     * Makes sure pages below {@code pages} are faulted in, a batch at a time (MADV_POPULATE_WRITE: the
     * kernel fills the page tables in one call and leaves contents alone). A first touch per 4 KiB page
     * on the read path had cost half the gateway's CPU in the sequential benchmark (page faults are
     * dear, dearer in a VM); populating only as far as the allocator has reached keeps a small working
     * set from paying for the whole region. Shared memory counts in RSS once populated.
     *
     * @throws StagingException when the file system behind the segments is full: touching those pages
     *     would have been SIGBUS
     */
    void populateBelow(int pages) {
        synchronized (this) {
            if (pages <= populatedPages || populateUnsupported) {
                return;
            }
            int target = Math.min(config.pageCount(), Math.max(pages, populatedPages + populateBatchPages));
            for (int page = populatedPages; page < target; ) {
                int segment = page / pagesPerSegment;
                int end = Math.min(target, (segment + 1) * pagesPerSegment);
                MemorySegment range = segments[segment].asSlice((long) (page % pagesPerSegment) << pageShift,
                        (long) (end - page) << pageShift);
                int errno = Madvise.populateWrite(range);
                if (errno == Madvise.EINVAL) {
                    populateUnsupported = true; // a kernel before 5.14: pages fault in on first use
                    return;
                }
                if (errno != 0) {
                    populatedPages = page;
                    throw new StagingException("no room for staging pages in " + directory.path()
                            + " (its file system is full; errno " + errno + "): the region was sized beyond what it can hold");
                }
                page = end;
            }
            populatedPages = target;
        }
    }

    public StagingConfig config() {
        return config;
    }

    public int pageSize() {
        return config.pageSize();
    }

    public int pageCount() {
        return config.pageCount();
    }

    /** The bytes of page {@code page}: a slice of its mapped segment. */
    public MemorySegment page(int page) {
        return segments[page / pagesPerSegment].asSlice((long) (page % pagesPerSegment) << pageShift, config.pageSize());
    }

    /** Copies {@code length} bytes from {@code within} page {@code page} into {@code target}: one memcpy, native to native. */
    void copyFromPage(int page, long within, MemorySegment target, long targetOffset, long length) {
        MemorySegment.copy(segments[page / pagesPerSegment], ((long) (page % pagesPerSegment) << pageShift) + within,
                target, targetOffset, length);
    }

    /** Segment file holding page {@code page}, and the page's offset in it (for consumers that mmap). */
    public Path segmentFile(int page) {
        return files.get(page / pagesPerSegment);
    }

    public long offsetInSegment(int page) {
        return (long) (page % pagesPerSegment) << pageShift;
    }

    /** Unmaps every segment; the owner also removes the directory. */
    @Override
    public void close() {
        arena.close();
        if (directory != null) {
            directory.remove();
        }
    }
}
