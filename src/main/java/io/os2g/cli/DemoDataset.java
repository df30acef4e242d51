package io.os2g.cli;

import io.minio.MakeBucketArgs;
import io.minio.BucketExistsArgs;
import io.minio.MinioClient;
import io.minio.PutObjectArgs;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;

/**
 * The demo's synthetic dataset, in ImageFolder layout: {@code train/class_NN/img_NNNNN.jpg} of JPEG
 * sizes (80-170 KB, about 125 KB on average) and {@code large/shard-N.bin}. Every byte follows from
 * the object's index, so a reader can check what it read against {@link #checksum}.
 */
final class DemoDataset {

    static final int CLASSES = 10;

    record Entry(String key, long size, long seed) {
    }

    private final List<Entry> small = new ArrayList<>();
    private final List<Entry> large = new ArrayList<>();

    DemoDataset(int files, int largeFiles, long largeSize) {
        SplittableRandom sizes = new SplittableRandom(42);
        for (int i = 0; i < files; i++) {
            String key = String.format("train/class_%02d/img_%05d.jpg", i % CLASSES, i);
            small.add(new Entry(key, 80_000 + sizes.nextInt(90_000), i));
        }
        for (int i = 0; i < largeFiles; i++) {
            large.add(new Entry("large/shard-" + i + ".bin", largeSize, 1_000_000L + i));
        }
    }

    List<Entry> small() {
        return small;
    }

    List<Entry> large() {
        return large;
    }

    long totalBytes() {
        long n = 0;
        for (Entry e : small) {
            n += e.size();
        }
        for (Entry e : large) {
            n += e.size();
        }
        return n;
    }

    /** Deterministic bytes of an entry, produced in blocks so a 256 MiB object never sits in memory whole. */
    static InputStream content(Entry e) {
        return new InputStream() {
            private final SplittableRandom random = new SplittableRandom(e.seed());
            private final byte[] block = new byte[64 * 1024];
            private int blockPos = block.length;
            private long remaining = e.size();

            @Override
            public int read() {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (remaining == 0) {
                    return -1;
                }
                if (blockPos == block.length) {
                    random.nextBytes(block);
                    if (remaining == e.size() && e.key().endsWith(".jpg")) {
                        block[0] = (byte) 0xFF; // a JPEG start-of-image marker, for `file` and curious users
                        block[1] = (byte) 0xD8;
                    }
                    blockPos = 0;
                }
                int n = (int) Math.min(Math.min(len, block.length - blockPos), remaining);
                System.arraycopy(block, blockPos, b, off, n);
                blockPos += n;
                remaining -= n;
                return n;
            }
        };
    }

    static long checksum(Entry e) throws IOException {
        CRC32C crc = new CRC32C();
        byte[] buffer = new byte[1 << 16];
        try (InputStream in = content(e)) {
            for (int n; (n = in.read(buffer)) > 0; ) {
                crc.update(buffer, 0, n);
            }
        }
        return crc.getValue();
    }

    /** Uploads every object through the S3 API with {@code threads} uploads at a time. */
    void upload(MinioClient client, String bucket, int threads) throws Exception {
        if (!client.bucketExists(BucketExistsArgs.builder().bucket(bucket).build())) {
            client.makeBucket(MakeBucketArgs.builder().bucket(bucket).build());
        }
        List<Entry> all = new ArrayList<>(large);
        all.addAll(small);
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> done = new ArrayList<>();
            for (Entry e : all) {
                done.add(pool.submit(() -> {
                    try (InputStream in = content(e)) {
                        client.putObject(PutObjectArgs.builder().bucket(bucket).object(e.key())
                                .stream(in, e.size(), e.size() > (64L << 20) ? 64L << 20 : -1).build());
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        }
    }

}
