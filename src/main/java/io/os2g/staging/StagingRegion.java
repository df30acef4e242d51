package io.os2g.staging;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.StandardOpenOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

/**
 * The segment files of one staging directory, open for the life of the region. Pages are numbered
 * across segments: page {@code p} lives in segment {@code p / pagesPerSegment}. Bytes move in and out
 * through {@link SegmentFiles} (pwrite/pread, or splice to a pipe); any process may also mmap a segment
 * (a consumer that wants the staged bytes in place). Closing closes the files, unmaps what the region's
 * {@link Arena} mapped (its extent table), and the owner removes the directory.
 *
 * <p>How pages are reused: an evicted chunk's pages are overwritten where they are. So a reader that
 * splices a pinned chunk into a pipe keeps the pin until the pipe's bytes are consumed (a READ's reply
 * sent to /dev/fuse, which copies them): the page references in a pipe see later writes. A region
 * registered with a GPU needs nothing more: the device holds these same physical pages.
 */
public final class StagingRegion implements AutoCloseable {

    private final StagingConfig config;
    private final StagingDirectory directory;
    private final Arena arena = Arena.ofShared();
    private final List<Path> files = new ArrayList<>();
    private final SegmentFiles segments;
    private final int pageShift;
    private final int pagesPerSegment;
    /** The segments mapped here, made on the first {@link #receive}; guarded by {@code this}. */
    private SegmentMappings mappings;

    /**
     * @param directory the claimed directory, whose segments this creates; null to open an agent's existing ones
     * @param writable whether an agent's existing segments are opened for writing too
     */
    private StagingRegion(StagingConfig config, StagingDirectory directory, boolean writable) throws IOException {
        this.config = config;
        this.directory = directory;
        this.pageShift = Integer.numberOfTrailingZeros(config.pageSize());
        this.pagesPerSegment = config.pagesPerSegment();
        long remaining = (long) config.pageCount() * config.pageSize();
        for (int i = 0; i < config.segmentCount(); i++) {
            long size = Math.min(config.segmentSize(), remaining);
            remaining -= size;
            Path file = config.directory().resolve(String.format("segment-%04d", i));
            if (directory != null) {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                try (RandomAccessFile sparse = new RandomAccessFile(file.toFile(), "rw")) {
                    sparse.setLength(size); // pages take memory as they are first written
                }
            } else if (Files.size(file) < size) {
                throw new IOException("segment " + file + " is smaller than the agent said: " + Files.size(file) + " < " + size);
            }
            files.add(file);
        }
        this.segments = new SegmentFiles(files, directory != null || writable);
    }

    /** Claims the directory and creates the segments. */
    public static StagingRegion create(StagingConfig config) {
        StagingDirectory directory = StagingDirectory.claim(config.directory());
        try {
            return new StagingRegion(config, directory, true);
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

    /** Opens the segments another process created in {@code config.directory()} (a shim reading an agent's region). */
    static StagingRegion attach(StagingConfig config, boolean writable) {
        try {
            return new StagingRegion(config, null, writable);
        } catch (IOException e) {
            throw new StagingException("cannot open staging segments in " + config.directory() + ": " + StagingDirectory.describe(e), e);
        }
    }

    Arena arena() {
        return arena;
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

    /**
     * Copies {@code length} bytes from {@code within} page {@code page} on into {@code target}: one
     * pread. The bytes may run on into the following pages of the same segment.
     */
    void copyFromPages(int page, long within, MemorySegment target, long targetOffset, long length) {
        segments.read(page / pagesPerSegment, offsetInSegment(page) + within, target, targetOffset, length);
    }

    /** Copies {@code source} to {@code within} page {@code page}: one pwrite. */
    void copyToPage(int page, long within, MemorySegment source) {
        segments.write(page / pagesPerSegment, offsetInSegment(page) + within, source);
    }

    /**
     * Moves {@code length} bytes from {@code within} page {@code page} on into the pipe {@code pipe}, by
     * reference: one splice. Returns the bytes moved (fewer when the pipe is full).
     */
    long spliceFromPages(int page, long within, int pipe, long length) {
        return segments.splice(page / pagesPerSegment, offsetInSegment(page) + within, pipe, length);
    }

    /**
     * Copies {@code bytes} to {@code offset} of the run of {@code pages} (page {@code i} holds bytes
     * {@code [i * pageSize, (i + 1) * pageSize)}): one pwrite per run of adjacent pages.
     */
    void copyIn(int[] pages, long offset, MemorySegment bytes) {
        forEachRun(pages, offset, bytes.byteSize(), (page, within, done, n) -> copyToPage(page, within, bytes.asSlice(done, n)));
    }

    /**
     * Reads exactly {@code length} bytes from {@code from} into the start of the run of {@code pages}
     * (bytes posted from another machine) through this process's mapping of the segments: a socket
     * channel copies them once, straight into the pages.
     *
     * @throws java.io.EOFException when {@code from} ends first
     */
    void receive(int[] pages, long length, java.nio.channels.ReadableByteChannel from) throws IOException {
        SegmentMappings mapped = mappings();
        int pageSize = config.pageSize();
        if (length < 0 || length > (long) pages.length * pageSize) {
            throw new IndexOutOfBoundsException("outside the pages: length=" + length + ", pages=" + pages.length);
        }
        for (long done = 0; done < length; ) {
            int first = (int) (done / pageSize);
            int last = first;
            long n = pageSize;
            while (n < length - done && adjacent(pages[last], pages[last + 1])) {
                last++;
                n += pageSize;
            }
            n = Math.min(n, length - done);
            java.nio.ByteBuffer window = mapped.writable(pages[first] / pagesPerSegment, offsetInSegment(pages[first]), n);
            while (window.hasRemaining()) {
                if (from.read(window) < 0) {
                    throw new java.io.EOFException("posted bytes ended after " + (done + window.position()) + " of " + length);
                }
            }
            done += n;
        }
    }

    private synchronized SegmentMappings mappings() throws IOException {
        if (mappings == null) {
            long[] sizes = new long[files.size()];
            long remaining = (long) config.pageCount() * config.pageSize();
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = Math.min(config.segmentSize(), remaining);
                remaining -= sizes[i];
            }
            mappings = new SegmentMappings(files, sizes, config.pageSize());
        }
        return mappings;
    }

    /** Copies {@code target.byteSize()} bytes from {@code offset} of the run of {@code pages} into {@code target}. */
    void copyOut(int[] pages, long offset, MemorySegment target) {
        forEachRun(pages, offset, target.byteSize(), (page, within, done, n) -> copyFromPages(page, within, target, done, n));
    }

    /**
     * Sends {@code length} bytes from {@code offset} of the run of {@code pages} to {@code channel}: to a
     * socket with sendfile(2) from the segment files, no copy through this process; to another channel
     * (a TLS stream's) from the mapped pages. Each call opens the segments it needs for itself: an
     * interrupt closes only its own channels.
     */
    void transferTo(int[] pages, long offset, long length, WritableByteChannel channel) throws IOException {
        java.util.Map<Integer, FileChannel> open = new java.util.HashMap<>();
        try {
            IOException[] failure = new IOException[1];
            forEachRun(pages, offset, length, (page, within, done, n) -> {
                if (failure[0] != null) {
                    return;
                }
                try {
                    long at = offsetInSegment(page) + within;
                    if (!(channel instanceof java.nio.channels.SelectableChannel) && !(channel instanceof FileChannel)) {
                        // a stream's channel (TLS) takes the mapped pages whole: the JDK's transfer would hand it 8 KiB at a time
                        java.nio.ByteBuffer run = mappings().readable(page / pagesPerSegment, at, n);
                        while (run.hasRemaining()) {
                            channel.write(run);
                        }
                        return;
                    }
                    FileChannel segment = open.get(page / pagesPerSegment);
                    if (segment == null) {
                        segment = FileChannel.open(files.get(page / pagesPerSegment), StandardOpenOption.READ);
                        open.put(page / pagesPerSegment, segment);
                    }
                    for (long sent = 0; sent < n; ) {
                        long k = segment.transferTo(at + sent, n - sent, channel);
                        if (k <= 0) {
                            // a socket the JDK made non-blocking (a virtual thread used it) takes no more now:
                            // the rest of the run goes through a buffer, with the channel's own wait
                            copy(segment, at + sent, n - sent, channel);
                            break;
                        }
                        sent += k;
                    }
                } catch (IOException e) {
                    failure[0] = e;
                }
            });
            if (failure[0] != null) {
                throw failure[0];
            }
        } finally {
            for (FileChannel c : open.values()) {
                c.close();
            }
        }
    }

    private static void copy(FileChannel segment, long at, long length, WritableByteChannel channel) throws IOException {
        java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocate((int) Math.min(length, 256 << 10));
        for (long done = 0; done < length; ) {
            buffer.clear().limit((int) Math.min(buffer.capacity(), length - done));
            int n = segment.read(buffer, at + done);
            if (n <= 0) {
                throw new IOException("staging segment ends before offset " + (at + done));
            }
            buffer.flip();
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            done += n;
        }
    }

    private interface Run {
        void take(int page, long within, long done, long n);
    }

    private void forEachRun(int[] pages, long offset, long length, Run run) {
        int pageSize = config.pageSize();
        if (offset < 0 || offset + length > (long) pages.length * pageSize) {
            throw new IndexOutOfBoundsException("outside the pages: offset=" + offset + ", length=" + length
                    + ", pages=" + pages.length);
        }
        long done = 0;
        while (done < length) {
            long at = offset + done;
            int first = (int) (at / pageSize);
            int last = first;
            long n = pageSize - at % pageSize;
            while (n < length - done && adjacent(pages[last], pages[last + 1])) {
                last++;
                n += pageSize;
            }
            n = Math.min(n, length - done);
            run.take(pages[first], at % pageSize, done, n);
            done += n;
        }
    }

    /** Whether pages {@code a} and {@code b = a + 1} lie side by side in one segment file. */
    boolean adjacent(int a, int b) {
        return b == a + 1 && a / pagesPerSegment == b / pagesPerSegment;
    }

    /** The segment files, in page order. */
    public List<Path> segmentFiles() {
        return List.copyOf(files);
    }

    /** Segment file holding page {@code page}, and the page's offset in it (for consumers that mmap). */
    public Path segmentFile(int page) {
        return files.get(page / pagesPerSegment);
    }

    public long offsetInSegment(int page) {
        return (long) (page % pagesPerSegment) << pageShift;
    }

    /** Closes the segments and unmaps the extent table; the owner also removes the directory. */
    @Override
    public void close() {
        synchronized (this) {
            if (mappings != null) {
                mappings.close();
            }
        }
        segments.close();
        arena.close();
        if (directory != null) {
            directory.remove();
        }
    }
}
