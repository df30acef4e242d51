package io.os2g.cli;

import io.minio.MinioClient;
import io.os2g.runtime.Gateway;
import io.os2g.runtime.MountConfig;
import io.os2g.runtime.Preflight;
import io.os2g.runtime.Sizes;
import io.os2g.runtime.UsageError;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code os2g demo}: an S3 server in a child process, a synthetic ImageFolder dataset seeded through
 * the S3 API, an os2g mount of it, and a DataLoader-like read of it, with the numbers.
 */
@Command(name = "demo", sortOptions = false, usageHelpAutoWidth = true,
        description = {"Start a local S3 server (S3Proxy), seed a synthetic ImageFolder dataset, mount it with os2g,",
                "read it like a DataLoader (shuffled, 4 readers; then large files sequentially), and report files/s,",
                "MB/s and the gateway's CPU seconds per GiB. Stays mounted until Ctrl-C unless --exit."})
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--files", defaultValue = "2000", description = "Small (JPEG-sized) files (default: ${DEFAULT-VALUE}).")
    int files;

    @Option(names = "--large-files", defaultValue = "2", description = "Large files (default: ${DEFAULT-VALUE}).")
    int largeFiles;

    @Option(names = "--large-size", defaultValue = "256M", description = "Size of each large file (default: ${DEFAULT-VALUE}).")
    String largeSize;

    @Option(names = "--readers", defaultValue = "4", description = "Parallel readers of the small files (default: ${DEFAULT-VALUE}).")
    int readers;

    @Option(names = "--latency-ms", defaultValue = "0", description = "Latency the S3 server adds to each GET, LIST, HEAD (default: ${DEFAULT-VALUE}).")
    long latencyMs;

    @Option(names = "--mountpoint", description = "Where to mount (default: a new directory under /tmp).")
    Path mountPoint;

    @Option(names = "--staging-size", defaultValue = "1G", description = "Staging region size (default: ${DEFAULT-VALUE}).")
    String stagingSize;

    @Option(names = "--exit", description = "Unmount and exit after the report.")
    boolean exit;

    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help.")
    boolean help;

    @Option(names = "--debug", description = "Debug logging, and stack traces on errors.")
    boolean debug;

    private static final String BUCKET = "demo";

    @Override
    public Integer call() throws Exception {
        Logging.configure(debug);
        Preflight.fuseAvailable(); // before the server starts and the data is seeded
        if (Os2g.s3ServerCommand() == null) {
            throw new UsageError(Os2g.S3_SERVER_MISSING);
        }
        Path work = Files.createTempDirectory("os2g-demo-");
        Path data = Files.createDirectories(work.resolve("s3"));
        Path mount = mountPoint != null ? mountPoint : Files.createDirectories(work.resolve("mnt"));
        Files.createDirectories(mount);
        Process server = startServer(data);
        Gateway gateway = null;
        try {
            Listening listening = readEndpoint(server);
            String endpoint = listening.endpoint();
            DemoDataset dataset = new DemoDataset(files, largeFiles, Sizes.parse("--large-size", largeSize));
            say("S3 server (S3Proxy, filesystem backend%s) at %s", latencyMs > 0 ? ", " + latencyMs + " ms latency" : "", endpoint);
            long t0 = System.nanoTime();
            MinioClient client = MinioClient.builder().endpoint(endpoint).credentials(listening.accessKey(), listening.secretKey()).build();
            dataset.upload(client, BUCKET, 4);
            say("seeded s3://%s: %d files of ~125 KB in %d classes + %d x %s in %.1f s", BUCKET, files, DemoDataset.CLASSES,
                    largeFiles, largeSize, seconds(System.nanoTime() - t0));

            MountCommand mountCommand = MountCommand.parse(BUCKET, mount.toString(), "--endpoint", endpoint,
                    "--credentials-file", writeCredentials(work, listening).toString(), "--metadata-ttl", "forever",
                    "--staging-size", stagingSize);
            MountConfig config = mountCommand.config();
            gateway = Gateway.open(config);
            Gateway mounted = gateway;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                mounted.close();
                server.destroy();
                deleteTree(work);
            }, "os2g-demo-shutdown"));
            say("mounted at %s", mount);

            report(mount, dataset);
            if (exit) {
                return 0;
            }
            say("still mounted at %s: try ls -R %s; Ctrl-C unmounts", mount, mount);
            gateway.awaitUnmount();
            return 0;
        } finally {
            if (gateway != null && exit) {
                gateway.close();
            }
            if (exit || gateway == null) {
                server.destroy();
                deleteTree(work);
            }
        }
    }

    private void report(Path mount, DemoDataset dataset) throws Exception {
        Map<String, Long> expected = new ConcurrentHashMap<>();
        for (DemoDataset.Entry e : dataset.small()) {
            expected.put(e.key(), DemoDataset.checksum(e));
        }
        long t0 = System.nanoTime();
        List<Path> paths;
        try (Stream<Path> walk = Files.walk(mount.resolve("train"))) {
            paths = new ArrayList<>(walk.filter(Files::isRegularFile).toList());
        }
        say("walk: %d files listed in %.2f s", paths.size(), seconds(System.nanoTime() - t0));
        Collections.shuffle(paths, new Random(7));

        CpuMeter cpu = new CpuMeter();
        Result small = readAll(paths, readers, mount, expected);
        double gatewayCpu = cpu.gatewaySeconds(small.readerCpuNanos());
        say("shuffled reads, %d readers: %d files, %.0f files/s, %.0f MB/s, %d bytes verified, gateway CPU %.2f s/GiB",
                readers, small.files(), small.files() / small.seconds(), small.bytes() / 1e6 / small.seconds(),
                small.bytes(), gatewayCpu / (small.bytes() / (double) (1L << 30)));

        if (!dataset.large().isEmpty()) {
            List<Path> large = dataset.large().stream().map(e -> mount.resolve(e.key())).toList();
            CpuMeter cpuLarge = new CpuMeter();
            Result seq = readAll(large, 1, mount, null);
            double largeCpu = cpuLarge.gatewaySeconds(seq.readerCpuNanos());
            say("sequential reads, 1 reader: %d files, %.0f MB/s, gateway CPU %.2f s/GiB",
                    seq.files(), seq.bytes() / 1e6 / seq.seconds(), largeCpu / (seq.bytes() / (double) (1L << 30)));
        }
    }

    record Result(long files, long bytes, double seconds, long readerCpuNanos) {
    }

    /** Reads every file whole with {@code threads} readers, checking CRC32C where expected is given. */
    private static Result readAll(List<Path> paths, int threads, Path mount, Map<String, Long> expected) throws Exception {
        ConcurrentLinkedQueue<Path> queue = new ConcurrentLinkedQueue<>(paths);
        AtomicLong bytes = new AtomicLong();
        AtomicLong count = new AtomicLong();
        AtomicLong readerCpu = new AtomicLong();
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        CountDownLatch done = new CountDownLatch(threads);
        long t0 = System.nanoTime();
        for (int i = 0; i < threads; i++) {
            Thread.ofPlatform().name("demo-reader-" + i).start(() -> {
                ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
                try {
                    for (Path p; (p = queue.poll()) != null; ) {
                        CRC32C crc = new CRC32C();
                        try (FileChannel ch = FileChannel.open(p)) {
                            for (int n; (n = ch.read(buffer.clear())) > 0; ) {
                                bytes.addAndGet(n);
                                if (expected != null) {
                                    crc.update(buffer.flip());
                                }
                            }
                        }
                        if (expected != null) {
                            String key = mount.relativize(p).toString();
                            if (crc.getValue() != expected.get(key)) {
                                throw new IOException("wrong bytes read from " + p);
                            }
                        }
                        count.incrementAndGet();
                    }
                } catch (Throwable t) {
                    errors.add(t);
                } finally {
                    readerCpu.addAndGet(ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime());
                    done.countDown();
                }
            });
        }
        done.await();
        double seconds = seconds(System.nanoTime() - t0);
        if (!errors.isEmpty()) {
            throw new IOException("read failed: " + errors.peek().getMessage(), errors.peek());
        }
        return new Result(count.get(), bytes.get(), seconds, readerCpu.get());
    }

    /** CPU time of this process minus the demo's reader threads: what the gateway spent. */
    private static final class CpuMeter {
        private final long start = processCpu();

        double gatewaySeconds(long readerNanos) {
            return Math.max(0, processCpu() - start - readerNanos) / 1e9;
        }

        private static long processCpu() {
            return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        }
    }

    private Process startServer(Path data) throws IOException {
        Files.createDirectories(data.resolve(BUCKET));
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = List.of(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                Os2g.class.getName(), "s3-server", "--dir", data.toString(), "--latency-ms", Long.toString(latencyMs));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
    }

    /** What the server's first lines say: its endpoint and its (fixed, public) keys. */
    private record Listening(String endpoint, String accessKey, String secretKey) {
    }

    private static Listening readEndpoint(Process server) throws IOException {
        BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        String endpoint = null;
        for (String line; (line = out.readLine()) != null; ) {
            if (line.startsWith("endpoint ")) {
                endpoint = line.substring("endpoint ".length()).strip();
            } else if (line.startsWith("credentials ") && endpoint != null) {
                String[] keys = line.strip().split(" ");
                if (keys.length == 3) {
                    return new Listening(endpoint, keys[1], keys[2]);
                }
            }
        }
        throw new IOException("the S3 server exited before it listened");
    }

    private static Path writeCredentials(Path work, Listening server) throws IOException {
        Path file = work.resolve("credentials");
        Files.writeString(file, "[default]\naws_access_key_id = " + server.accessKey()
                + "\naws_secret_access_key = " + server.secretKey() + "\n");
        return file;
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | RuntimeException e) {
            // best effort: a temp dir
        }
    }

    private static double seconds(long nanos) {
        return nanos / 1e9;
    }

    private static void say(String format, Object... args) {
        System.out.println("os2g demo: " + String.format(format, args));
    }
}
