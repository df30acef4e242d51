package io.os2g.diskcache;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

/**
 * Keeps a cache within its bounds: the blocks' total at most {@code maxBytes}, and {@code minFreePercent}
 * of the file system free. A sweep lists every block (those of every process sharing the directory),
 * and deletes the least recently used (oldest modification time: a hit touches its block) until both
 * hold with a tenth of the bound to spare, so that sweeps are rare. Temporary files of writers that died
 * are removed after an hour.
 */
final class Sweeper {

    /** A sweep brings the total down to this share of the bound. */
    static final double LOW_WATER = 0.9;
    static final long STALE_TEMPORARY_MILLIS = 3_600_000;

    /** The file system's space, as the sweep sees it (a test's small disk). */
    interface Space {
        long total() throws IOException;

        long usable() throws IOException;
    }

    private final Path blocks;
    private final Path tmp;
    private final long maxBytes;
    private final int minFreePercent;
    private final Space space;
    private final LongAdder evictions = new LongAdder();

    Sweeper(Path blocks, Path tmp, long maxBytes, int minFreePercent, Space space) {
        this.blocks = blocks;
        this.tmp = tmp;
        this.maxBytes = maxBytes;
        this.minFreePercent = minFreePercent;
        this.space = space;
    }

    static Space space(Path directory) {
        FileStore store;
        try {
            store = Files.getFileStore(directory);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new Space() {
            @Override
            public long total() throws IOException {
                return store.getTotalSpace();
            }

            @Override
            public long usable() throws IOException {
                return store.getUsableSpace();
            }
        };
    }

    /** Free space above the floor kept free: what the cache may still take of its file system. */
    long roomAboveFloor() {
        try {
            return space.usable() - floor();
        } catch (IOException e) {
            return 0;
        }
    }

    private long floor() throws IOException {
        return space.total() / 100 * minFreePercent;
    }

    long evictions() {
        return evictions.sum();
    }

    /** One block file, as listed. */
    record Block(Path path, long size, long lastUsedMillis) {
    }

    /** Deletes least recently used blocks until the bounds hold; returns how many went. */
    int sweep() throws IOException {
        removeStaleTemporaries();
        List<Block> all = list();
        long total = all.stream().mapToLong(Block::size).sum();
        long target = maxBytes == Long.MAX_VALUE ? Long.MAX_VALUE : (long) (maxBytes * LOW_WATER);
        long room = space.usable() - floor();
        // above the floor with a tenth of the bound (or 64 MiB) to spare
        long spare = maxBytes == Long.MAX_VALUE ? DiskCache.MIN_ROOM : Math.max(DiskCache.MIN_ROOM, maxBytes / 10);
        if (total <= maxBytes && room >= 0) {
            return 0;
        }
        all.sort(Comparator.comparingLong(Block::lastUsedMillis));
        int deleted = 0;
        for (Block b : all) {
            if (total <= target && room >= spare) {
                break;
            }
            try {
                Files.delete(b.path());
                total -= b.size();
                room += b.size();
                deleted++;
            } catch (NoSuchFileException e) {
                total -= b.size(); // another process's sweep took it
            }
        }
        evictions.add(deleted);
        return deleted;
    }

    /** Every block, with its size and last use. */
    List<Block> list() throws IOException {
        List<Block> all = new ArrayList<>();
        if (!Files.isDirectory(blocks)) {
            return all;
        }
        try (Stream<Path> shards = Files.list(blocks)) {
            for (Path shard : (Iterable<Path>) shards::iterator) {
                try (Stream<Path> files = Files.list(shard)) {
                    for (Path f : (Iterable<Path>) files::iterator) {
                        try {
                            BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
                            if (a.isRegularFile()) {
                                all.add(new Block(f, a.size(), a.lastModifiedTime().toMillis()));
                            }
                        } catch (NoSuchFileException e) {
                            // swept meanwhile
                        }
                    }
                } catch (NoSuchFileException | java.nio.file.NotDirectoryException e) {
                    // a shard swept meanwhile, or not one of ours
                }
            }
        }
        return all;
    }

    private void removeStaleTemporaries() throws IOException {
        if (!Files.isDirectory(tmp)) {
            return;
        }
        long before = System.currentTimeMillis() - STALE_TEMPORARY_MILLIS;
        try (Stream<Path> files = Files.list(tmp)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                try {
                    if (Files.getLastModifiedTime(f).toMillis() < before) {
                        Files.deleteIfExists(f);
                    }
                } catch (NoSuchFileException e) {
                    // its writer renamed it meanwhile
                }
            }
        }
    }
}
