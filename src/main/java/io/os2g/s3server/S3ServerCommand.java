package io.os2g.s3server;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code os2g s3-server}: the S3Proxy test server as a process, for the integration suite and benchmarks. */
@Command(name = "s3-server", hidden = true, mixinStandardHelpOptions = true,
        description = {"Serve DIR over S3 on 127.0.0.1 (S3Proxy, filesystem backend) for tests and benchmarks.",
                "Credentials: AWS_ACCESS_KEY_ID=" + S3Server.ACCESS_KEY + " AWS_SECRET_ACCESS_KEY=" + S3Server.SECRET_KEY + "."})
public final class S3ServerCommand implements Callable<Integer> {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--dir", paramLabel = "DIR", description = "Directory whose sub-directories are the buckets (filesystem backend).")
    Path dir;

    @Option(names = "--memory", description = "Keep objects in memory instead (any key, even ones a file system cannot hold).")
    boolean memory;

    @Option(names = "--port", defaultValue = "0", paramLabel = "PORT", description = "Port (default: a free one).")
    int port;

    @Option(names = "--latency-ms", defaultValue = "0", paramLabel = "MS", description = "Delay added to every GET, LIST and HEAD.")
    long latencyMs;

    @Option(names = "--tls-keystore", paramLabel = "FILE",
            description = "Serve https with the key and certificate in this key store (password " + S3Server.KEYSTORE_PASSWORD + ").")
    Path tlsKeyStore;

    @Option(names = "--bucket", paramLabel = "NAME", description = "Create this bucket if it does not exist.")
    String bucket;

    @Override
    public Integer call() throws Exception {
        if (memory == (dir != null)) {
            throw new CommandLine.ParameterException(spec.commandLine(), "give exactly one of --dir DIR and --memory");
        }
        if (dir != null) {
            Files.createDirectories(dir);
        }
        try (S3Server server = S3Server.start(memory ? null : dir, port, latencyMs, tlsKeyStore)) {
            if (bucket != null && !server.blobStore().containerExists(bucket)) {
                server.blobStore().createContainerInLocation(null, bucket);
            }
            // the line scripts wait for, then its fixed, public keys
            System.out.println("endpoint " + server.endpoint());
            System.out.println("credentials " + S3Server.ACCESS_KEY + " " + S3Server.SECRET_KEY);
            System.out.flush();
            new CountDownLatch(1).await();
        }
        return 0;
    }
}
