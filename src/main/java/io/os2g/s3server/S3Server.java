package io.os2g.s3server;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.BlobStoreContext;

/**
 * A real S3 server for the demo, the tests and the benchmarks: S3Proxy over a directory (jclouds
 * filesystem backend), with a fixed delay on each GET, LIST and HEAD ({@link DelayedBlobStore}) to
 * stand in for a remote object store.
 * Listens on 127.0.0.1 only. The credentials are fixed and public: this is never a production server.
 */
public final class S3Server implements AutoCloseable {

    /** The server's fixed credentials (compile-time constants: the demo's code holds them without loading this class). */
    public static final String ACCESS_KEY = "os2g-demo";
    public static final String SECRET_KEY = "os2g-demo-secret";
    /** Password of the key store given for https (a test server's self-signed key). */
    static final String KEYSTORE_PASSWORD = "os2g-demo";

    private final S3Proxy proxy;
    private final BlobStoreContext context;
    private final URI endpoint;

    private S3Server(S3Proxy proxy, BlobStoreContext context, URI endpoint) {
        this.proxy = proxy;
        this.context = context;
        this.endpoint = endpoint;
    }

    /**
     * @param directory where the filesystem backend keeps the buckets; null for the in-memory backend,
     *     which, unlike a file system, holds any key (a key {@code a} beside {@code a/}, {@code ..})
     * @param port TCP port on 127.0.0.1, or 0 for a free one
     * @param latencyMillis delay added to each GET, LIST and HEAD (0 for none)
     * @param keyStore for https: a key store (password {@value #KEYSTORE_PASSWORD}) with the server's
     *     key and certificate; null for plain http
     */
    static S3Server start(Path directory, int port, long latencyMillis, Path keyStore) throws Exception {
        Properties backend = new Properties();
        if (directory != null) {
            backend.setProperty("jclouds.filesystem.basedir", directory.toAbsolutePath().toString());
        }
        BlobStoreContext context = ContextBuilder.newBuilder(directory != null ? "filesystem" : "transient")
                .credentials(ACCESS_KEY, SECRET_KEY)
                .overrides(backend)
                .build(BlobStoreContext.class);
        BlobStore blobStore = context.getBlobStore();
        if (latencyMillis > 0) {
            blobStore = new DelayedBlobStore(blobStore, Duration.ofMillis(latencyMillis));
        }
        int chosen = port != 0 ? port : freePort();
        URI endpoint = URI.create((keyStore != null ? "https" : "http") + "://127.0.0.1:" + chosen);
        S3Proxy.Builder builder = S3Proxy.builder();
        if (keyStore != null) {
            builder.secureEndpoint(endpoint).keyStore(keyStore.toAbsolutePath().toString(), KEYSTORE_PASSWORD);
        } else {
            builder.endpoint(endpoint);
        }
        S3Proxy proxy = builder
                .blobStore(blobStore)
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
                .ignoreUnknownHeaders(true)
                .jettyMaxThreads(64)
                .build();
        proxy.start();
        waitUntilListening(chosen);
        return new S3Server(proxy, context, endpoint);
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void waitUntilListening(int port) throws InterruptedException, IOException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return;
            } catch (IOException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IOException("S3 server did not start listening on port " + port, e);
                }
                Thread.sleep(20);
            }
        }
    }

    URI endpoint() {
        return endpoint;
    }

    BlobStore blobStore() {
        return context.getBlobStore();
    }

    @Override
    public void close() throws Exception {
        proxy.stop();
        context.close();
    }
}
