package io.os2g.store;

import io.os2g.WarningLimiter;
import io.minio.MinioAsyncClient;
import io.minio.MinioClient;
import io.minio.RemoveObjectArgs;
import io.minio.messages.Part;
import io.minio.PutObjectArgs;
import io.minio.StatObjectArgs;
import io.minio.errors.ErrorResponseException;
import io.minio.errors.InvalidResponseException;
import io.minio.errors.ServerException;
import io.minio.http.HttpUtils;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.Proxy;
import java.net.ProxySelector;
import java.net.URI;
import java.net.UnknownHostException;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.DoubleConsumer;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLPeerUnverifiedException;
import okhttp3.ConnectionPool;
import okhttp3.Dispatcher;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link ObjectStore} over {@link ListObjectsV2} (listings), {@link RangedGet} (reads) and the MinIO Java client
 * (the rest: HEAD, PUT, the bucket's URL), with deadlines and bounded retries.
 */
public final class MinioObjectStore implements ObjectStore, ObjectUploads {

    private static final Logger LOG = LoggerFactory.getLogger(MinioObjectStore.class);
    private static final WarningLimiter LISTING_WARNINGS = new WarningLimiter(LOG);

    /** The process's proxies: HTTPS_PROXY, HTTP_PROXY and NO_PROXY, else the JVM's settings. */
    private static final ProxySelector PROXIES = ProxySettings.fromEnvironment();

    /** Connect quickly or not at all: a training job would rather see EIO than wait. */
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** The largest object one CopyObject copies; a larger one is copied in parts. */
    private static final long MAX_SINGLE_COPY = 5L << 30;

    private final StoreConfig config;
    private final RefreshingCredentials credentials;
    private final OkHttpClient http;
    /** Where requests go and how they are signed: replaced when the bucket turns out to be in another region. */
    private volatile Target target;
    /** GETs whose bodies are read from the socket by the caller, for a plain-HTTP endpoint; null after one it could not read. */
    private volatile SocketHttp socketHttp;
    /**
     * The uploads' connections, apart from the GETs': a socket a virtual thread has used is non-blocking
     * for good, and sendfile to it returns at once when its buffer is full. Parts are sent from platform
     * threads, so theirs stay blocking. Null where {@link #socketHttp} is.
     */
    private volatile SocketHttp socketPut;

    /** The bucket's address, signer and clients for one region. */
    private record Target(String region, MinioClient client, MinioAsyncClient uploads, BucketEndpoint endpoint,
                          RangedGet rangedGet, ListObjectsV2 listing, StreamedPut streamedPut) {
    }
    /** Whether parts and small objects go as unsigned, streamed PUTs ({@link StreamedPut}); false once the store refused one. */
    private volatile boolean streamedPuts = true;
    /** Whether a streamed PUT has succeeded: from then on its failures are the store's, not a refusal of the way. */
    private volatile boolean streamedPutWorked;
    private final LongAdder gets = new LongAdder();
    private final LongAdder retries = new LongAdder();
    private final LongAdder getsInFlight = new LongAdder();
    private volatile DoubleConsumer getSeconds = seconds -> { };

    /**
     * @throws StoreException BAD_CREDENTIALS when the configured credential sources have none now (the
     *     message names the sources tried); UNTRUSTED for a CA bundle that cannot be used
     */
    public MinioObjectStore(StoreConfig config) {
        this.config = config;
        try {
            this.credentials = RefreshingCredentials.start(config.credentials());
        } catch (CredentialsSource.Unavailable e) {
            throw new StoreException(StoreException.Kind.BAD_CREDENTIALS, e.getMessage(), e);
        }
        try {
            this.http = http(config);
            this.target = target(config.region());
            boolean plain = "http".equals(config.endpoint().getScheme()) && direct(config.endpoint(), PROXIES);
            this.socketHttp = plain ? new SocketHttp(CONNECT_TIMEOUT, config.retry().requestTimeout(), config.maxConnections()) : null;
            this.socketPut = plain ? new SocketHttp(CONNECT_TIMEOUT, config.retry().requestTimeout(), config.maxConnections()) : null;
        } catch (RuntimeException e) {
            credentials.close(); // no renewals for a store that was never made
            throw e;
        }
    }

    /** Clients of the bucket whose requests are signed for {@code region} (and, on AWS, go to its regional host). */
    private Target target(String region) {
        MinioClient.Builder builder = MinioClient.builder()
                .endpoint(config.endpoint().toString())
                .region(region)
                .httpClient(http, true);
        MinioAsyncClient.Builder uploadsBuilder = MinioAsyncClient.builder()
                .endpoint(config.endpoint().toString())
                .region(region)
                .httpClient(http, true);
        if (!credentials.current().isAnonymous()) {
            // the MinIO client's requests (HEAD, PUT, uploads) are signed with the renewed credentials too
            io.minio.credentials.Provider renewed = () -> {
                Credentials c = credentials.current();
                return new io.minio.credentials.Credentials(c.accessKeyId(), c.secretAccessKey(), c.sessionToken(), null);
            };
            builder.credentialsProvider(renewed);
            uploadsBuilder.credentialsProvider(renewed);
        }
        MinioClient client = builder.build();
        MinioAsyncClient uploads = uploadsBuilder.build();
        if (config.virtualHostStyle()) {
            client.enableVirtualStyleEndpoint();
            uploads.enableVirtualStyleEndpoint();
        } else {
            client.disableVirtualStyleEndpoint();
            uploads.disableVirtualStyleEndpoint();
        }
        BucketEndpoint endpoint = new BucketEndpoint(client, config, region, credentials);
        return new Target(region, client, uploads, endpoint, new RangedGet(http, endpoint), new ListObjectsV2(http, endpoint),
                new StreamedPut(http, endpoint, () -> socketPut));
    }

    /**
     * The store answered that the bucket is in {@code region}: from now on requests are signed for it (and
     * sent to its regional host where the endpoint is AWS's), unless the region was given, which is then
     * wrong. Returns whether the request is worth sending again.
     */
    private synchronized boolean retarget(String region) {
        if (region == null || config.regionGiven()) {
            return false;
        }
        if (region.equals(target.region())) {
            return true; // another request re-targeted it meanwhile
        }
        Target moved = target(region);
        LOG.info("bucket {} is in region {}: its requests are signed for it from now on", config.bucket(), region);
        target = moved;
        SocketHttp old = socketHttp;
        if (old != null) {
            // its kept connections may be to the old region's host
            socketHttp = new SocketHttp(CONNECT_TIMEOUT, config.retry().requestTimeout(), config.maxConnections());
            old.close();
        }
        SocketHttp oldPut = socketPut;
        if (oldPut != null) {
            socketPut = new SocketHttp(CONNECT_TIMEOUT, config.retry().requestTimeout(), config.maxConnections());
            oldPut.close();
        }
        return true;
    }

    /** The region requests are signed for now (the bucket's, once an answer named it). */
    public String region() {
        return target.region();
    }

    /** The OkHttp client of listings, ranged GETs through OkHttp and the MinIO client: one connection pool. */
    private static OkHttpClient http(StoreConfig config) {
        Duration call = config.retry().requestTimeout();
        Dispatcher dispatcher = new Dispatcher();
        dispatcher.setMaxRequests(config.maxConnections());
        dispatcher.setMaxRequestsPerHost(config.maxConnections());
        OkHttpClient base = new OkHttpClient.Builder()
                .socketFactory(new BufferedSocketFactory())
                .proxySelector(PROXIES)
                .connectTimeout(CONNECT_TIMEOUT)
                // the call's deadline bounds it whole, body included; a read or write timeout as well
                // would put each 8 KiB socket read into okio's timeout queue and take it out again
                .readTimeout(Duration.ZERO)
                .writeTimeout(Duration.ZERO)
                .callTimeout(call)
                // os2g retries itself, with backoff and a count it can report
                .retryOnConnectionFailure(false)
                // a redirect would be sent with the Host header of the old host: the store re-targets itself instead
                .followRedirects(false)
                .followSslRedirects(false)
                .connectionPool(new ConnectionPool(config.maxConnections(), 5, TimeUnit.MINUTES))
                .dispatcher(dispatcher)
                .build();
        return withTls(base, config);
    }

    /** Whether {@code proxies} send {@code endpoint} straight, not through a proxy (OkHttp speaks to proxies; SocketHttp does not). */
    private static boolean direct(URI endpoint, ProxySelector proxies) {
        return proxies.select(endpoint).stream().allMatch(p -> p.type() == Proxy.Type.DIRECT);
    }

    private static OkHttpClient withTls(OkHttpClient http, StoreConfig config) {
        if (!"https".equals(config.endpoint().getScheme())) {
            return http;
        }
        Tls tls = config.tls();
        try {
            if (tls.skipVerify()) {
                return HttpUtils.disableCertCheck(http);
            }
            if (tls.caBundle() != null) {
                return HttpUtils.enableExternalCertificates(http, tls.caBundle().toString());
            }
            return http;
        } catch (GeneralSecurityException | IOException | RuntimeException e) {
            throw new StoreException(StoreException.Kind.UNTRUSTED,
                    "cannot use CA bundle " + tls.caBundle() + ": " + e.getMessage(), e);
        }
    }

    public URI endpoint() {
        return config.endpoint();
    }

    @Override
    public String bucket() {
        return config.bucket();
    }

    /** The URL a read of {@code key} is sent to. */
    okhttp3.HttpUrl objectUrl(String key) {
        return target.endpoint().object(key);
    }

    /** GET requests sent, retries included. */
    public long getCount() {
        return gets.sum();
    }

    /** GET requests sent and not yet answered in full. */
    public long getsInFlight() {
        return getsInFlight.sum();
    }

    /** From now on, the duration in seconds of every GET attempt (request to last body byte) goes to {@code observer}. */
    public void observeGets(DoubleConsumer observer) {
        this.getSeconds = observer;
    }

    /** Attempts that failed transiently and were tried again. */
    public long retryCount() {
        return retries.sum();
    }

    @Override
    public Listing list(String prefix) {
        int most = ListObjectsV2.maxEntries();
        Listing listing = withRetries("list", prefix, () -> listOnce(prefix, most + 1));
        if (listing.objects().size() + listing.commonPrefixes().size() > most) {
            LISTING_WARNINGS.warn("too-large", "the directory {} of bucket {} has more than {} entries, more than this process's heap "
                    + "holds (-Xmx{}m): reading it fails with EIO; give os2g a larger heap, e.g. OS2G_JAVA_OPTS=-Xmx4g",
                    prefix, config.bucket(), most, Runtime.getRuntime().maxMemory() >> 20);
            throw new StoreException(StoreException.Kind.PROTOCOL, "bucket=" + config.bucket() + ", prefix=" + prefix
                    + ": more than " + most + " entries", null);
        }
        return listing;
    }

    /** One listing of one key, no retries; an answer naming the bucket's region re-targets the store and asks again. */
    @Override
    public void probe(String prefix) {
        try {
            listOnce(prefix, 1);
        } catch (StoreException e) {
            if (e.kind() != StoreException.Kind.WRONG_REGION || !retarget(e.region())) {
                throw e;
            }
            listOnce(prefix, 1);
        }
    }

    /**
     * Readies the GET path in the background, sending nothing: a GET is signed (the day's signing key
     * derived, the JVM's classes for it loaded) and a connection opened and kept for the first GET.
     * A mount's first reader then waits for the store, not for the client's first use (tens of ms).
     */
    public void warmUp() {
        Thread.ofVirtual().name("os2g-warm-get").start(() -> {
            try {
                Target t = target;
                Request request = RangedGet.request(t.endpoint(), "os2g-warm-up", 0, 1, "\"0\"");
                SocketHttp direct = socketHttp;
                if (direct != null) {
                    direct.connect(request.url());
                }
            } catch (IOException | RuntimeException e) {
                LOG.debug("warming the GET path failed: {}", e.toString());
            }
        });
    }

    private Listing listOnce(String prefix, int limit) {
        try {
            return target.listing().list(prefix, limit);
        } catch (Exception e) {
            throw classify(e, prefix);
        }
    }

    @Override
    public void get(String key, long offset, long length, String etag, BodyReader reader) {
        withRetries("get", key, () -> {
            gets.increment();
            getsInFlight.increment();
            long start = System.nanoTime();
            try {
                getOnce(key, offset, length, etag, reader);
            } catch (Exception e) {
                throw classify(e, key + " [" + offset + ", +" + length + ")");
            } finally {
                getsInFlight.decrement();
                getSeconds.accept((System.nanoTime() - start) / 1e9);
            }
            return null;
        });
    }

    /** One GET attempt: os2g's own HTTP path where it speaks the endpoint, else OkHttp. */
    private void getOnce(String key, long offset, long length, String etag, BodyReader reader) throws IOException {
        Target t = target;
        SocketHttp direct = socketHttp;
        if (direct == null) {
            t.rangedGet().get(key, offset, length, etag, reader);
            return;
        }
        try {
            direct.get(RangedGet.request(t.endpoint(), key, offset, length, etag), offset, length,
                    RangedGet.what(t.endpoint(), key, offset, length), reader);
        } catch (SocketHttp.Unsupported e) {
            LOG.info("{} sent {}: its GETs go through OkHttp from now on", config.endpoint(), e.getMessage());
            socketHttp = null;
            direct.close();
            t.rangedGet().get(key, offset, length, etag, reader);
        }
    }

    @Override
    public Map<String, String> userMetadata(String key) {
        return withRetries("head", key, () -> {
            try {
                Map<String, String> metadata = new HashMap<>();
                target.client().statObject(StatObjectArgs.builder().bucket(config.bucket()).object(key).build())
                        .userMetadata().forEach((name, value) -> metadata.put(name.toLowerCase(Locale.ROOT), value));
                return metadata;
            } catch (Exception e) {
                throw classify(e, key);
            }
        });
    }

    @Override
    public boolean exists(String key) {
        try {
            userMetadata(key);
            return true;
        } catch (StoreException e) {
            if (e.kind() == StoreException.Kind.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    /** Uploads {@code body} as {@code key} with its content type (one PUT, retried like a read): an index of {@code os2g index}. */
    public void put(String key, byte[] body, String contentType) {
        withRetries("put", key, () -> {
            try {
                target.client().putObject(PutObjectArgs.builder().bucket(config.bucket()).object(key)
                        .stream(new java.io.ByteArrayInputStream(body), body.length, -1).contentType(contentType).build());
            } catch (Exception e) {
                throw classify(e, key);
            }
            return null;
        });
    }

    /**
     * Creates {@code key} empty unless it exists (a conditional PUT, {@code If-None-Match: *}): true when
     * this call created it, false when it was there. A store that ignores the condition answers true.
     */
    public boolean createIfAbsent(String key) {
        Map<String, String> absent = Map.of("If-None-Match", "*");
        return withRetries("put", key, () -> {
            try {
                streamedOrSigned(key, Map.of(), absent, Body.of(new byte[0]),
                        bytes -> target.client().putObject(PutObjectArgs.builder().bucket(config.bucket()).object(key)
                                .stream(new java.io.ByteArrayInputStream(bytes), bytes.length, -1).extraHeaders(absent).build()).etag());
                return true;
            } catch (StoreException e) {
                if (e.kind() == StoreException.Kind.CHANGED) {
                    return false;
                }
                throw e;
            }
        });
    }

    @Override
    public String startUpload(String key) {
        return withRetries("create-upload", key, () -> {
            try {
                Target t = target;
                return await(t.uploads().createMultipartUploadAsync(config.bucket(), t.region(), key, null, null))
                        .result().uploadId();
            } catch (Exception e) {
                throw classify(e, key);
            }
        });
    }

    @Override
    public String uploadPart(String key, String uploadId, int partNumber, Body body) {
        return withRetries("upload-part", key, () -> streamedOrSigned(key,
                Map.of("partNumber", Integer.toString(partNumber), "uploadId", uploadId), body,
                bytes -> await(target.uploads().uploadPartAsync(config.bucket(), target.region(), key, bytes, bytes.length,
                        uploadId, partNumber, null, null)).etag()));
    }

    /** Signs the whole body in the MinIO client's way: its bytes in one array. */
    @FunctionalInterface
    private interface SignedPut {
        String put(byte[] bytes) throws Exception;
    }

    /**
     * A PUT of {@code body} as a streamed, unsigned payload; where the store refuses that (the first such
     * PUT fails for good and the client's signed PUT of the same bytes succeeds), the client's way from
     * then on. Returns the ETag.
     */
    private String streamedOrSigned(String key, Map<String, String> query, Body body, SignedPut signed) {
        return streamedOrSigned(key, query, Map.of(), body, signed);
    }

    private String streamedOrSigned(String key, Map<String, String> query, Map<String, String> headers, Body body, SignedPut signed) {
        StoreException refused = null;
        if (streamedPuts) {
            try {
                String etag = target.streamedPut().put(key, query, headers, body);
                streamedPutWorked = true;
                return etag;
            } catch (Exception e) {
                StoreException failure = classify(e, key);
                // a condition that did not hold is the store's answer, not a refusal of the way
                if (failure.retryable() || streamedPutWorked || failure.kind() == StoreException.Kind.CHANGED) {
                    throw failure;
                }
                refused = failure;
            }
        }
        try {
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream(body.length());
            body.writeTo(bytes);
            String etag = ObjectSummary.unquote(signed.put(bytes.toByteArray()));
            if (refused != null && streamedPuts) {
                streamedPuts = false; // the parts in flight with this one may log it too: a line or two
                LOG.info("{} refused an unsigned, streamed PUT ({}): uploads are signed whole from now on", config.endpoint(),
                        refused.getMessage());
            }
            return etag;
        } catch (Exception e) {
            // refused both ways: the way was not what the store refused, the first answer says what was
            throw refused != null ? refused : classify(e, key);
        }
    }

    @Override
    public ObjectSummary completeUpload(String key, String uploadId, List<String> partEtags, long size) {
        Part[] parts = new Part[partEtags.size()];
        for (int i = 0; i < parts.length; i++) {
            parts[i] = new Part(i + 1, partEtags.get(i));
        }
        return withRetries("complete-upload", key, () -> {
            try {
                Target t = target;
                String etag = await(t.uploads().completeMultipartUploadAsync(config.bucket(), t.region(), key, uploadId,
                        parts, null, null)).etag();
                return new ObjectSummary(key, size, ObjectSummary.unquote(etag), System.currentTimeMillis());
            } catch (Exception e) {
                throw classify(e, key);
            }
        });
    }

    @Override
    public void abortUpload(String key, String uploadId) {
        withRetries("abort-upload", key, () -> {
            try {
                Target t = target;
                await(t.uploads().abortMultipartUploadAsync(config.bucket(), t.region(), key, uploadId, null, null));
            } catch (Exception e) {
                StoreException failure = classify(e, key);
                if (failure.kind() != StoreException.Kind.NOT_FOUND) {
                    throw failure; // NoSuchUpload: already aborted or completed
                }
            }
            return null;
        });
    }

    @Override
    public ObjectSummary putObject(String key, Body body) {
        return withRetries("put", key, () -> new ObjectSummary(key, body.length(), streamedOrSigned(key, Map.of(), body,
                bytes -> target.client().putObject(PutObjectArgs.builder().bucket(config.bucket()).object(key)
                        .stream(new java.io.ByteArrayInputStream(bytes), bytes.length, -1).build()).etag()),
                System.currentTimeMillis()));
    }

    @Override
    public ObjectSummary copyObject(String from, String to, long size) {
        return withRetries("copy", from + " -> " + to, () -> {
            try {
                String etag;
                if (size <= MAX_SINGLE_COPY) {
                    etag = target.client().copyObject(io.minio.CopyObjectArgs.builder().bucket(config.bucket()).object(to)
                            .source(io.minio.CopySource.builder().bucket(config.bucket()).object(from).build()).build()).etag();
                } else {
                    etag = target.client().composeObject(io.minio.ComposeObjectArgs.builder().bucket(config.bucket()).object(to)
                            .sources(List.of(io.minio.ComposeSource.builder().bucket(config.bucket()).object(from).build()))
                            .build()).etag();
                }
                return new ObjectSummary(to, size, ObjectSummary.unquote(etag), System.currentTimeMillis());
            } catch (Exception e) {
                throw classify(e, from + " -> " + to);
            }
        });
    }

    @Override
    public void deleteObject(String key) {
        withRetries("delete", key, () -> {
            try {
                target.client().removeObject(RemoveObjectArgs.builder().bucket(config.bucket()).object(key).build());
            } catch (Exception e) {
                StoreException failure = classify(e, key);
                if (failure.kind() != StoreException.Kind.NOT_FOUND) {
                    throw failure;
                }
            }
            return null;
        });
    }

    /** The outcome of one of the MinIO client's asynchronous calls, its failure unwrapped. */
    private static <T> T await(CompletableFuture<T> call) throws Exception {
        try {
            return call.get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        } catch (InterruptedException e) {
            call.cancel(true);
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted");
        }
    }

    /**
     * Runs {@code call}, retrying transient failures with backoff; a request the store rejected for its
     * credentials (an expired session token, or temporary keys it no longer knows) is sent once more at
     * once when the credentials could be renewed.
     */
    private <T> T withRetries(String op, String what, java.util.function.Supplier<T> call) {
        RetryPolicy policy = config.retry();
        boolean renewed = false;
        boolean retargeted = false;
        for (int attempt = 1; ; attempt++) {
            Credentials used = credentials.current();
            try {
                return call.get();
            } catch (StoreException e) {
                if (!renewed && rejectedFor(e, used) && credentials.refreshAfterRejection(used) != used) {
                    renewed = true;
                    LOG.debug("{} {}: {}; sent again with renewed credentials", op, what, e.getMessage());
                    attempt--;
                    continue;
                }
                if (!retargeted && e.kind() == StoreException.Kind.WRONG_REGION && retarget(e.region())) {
                    retargeted = true;
                    attempt--;
                    continue;
                }
                if (!e.retryable() || attempt >= policy.maxAttempts()) {
                    throw e;
                }
                retries.increment();
                Duration pause = policy.backoff(attempt);
                LOG.debug("{} {} failed ({}), retry {} in {} ms", op, what, e.getMessage(), attempt, pause.toMillis());
                try {
                    Thread.sleep(pause);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new StoreException(StoreException.Kind.UNAVAILABLE, op + " interrupted: " + what, ie);
                }
            }
        }
    }

    private static boolean rejectedFor(StoreException e, Credentials used) {
        return e.kind() == StoreException.Kind.EXPIRED_CREDENTIALS
                || (e.kind() == StoreException.Kind.BAD_CREDENTIALS && used.isTemporary());
    }

    private StoreException classify(Exception e, String what) {
        String where = "bucket=" + config.bucket() + ", key=" + what;
        if (e instanceof StoreException se) {
            return se;
        }
        if (e instanceof ErrorResponseException ere) {
            String code = ere.errorResponse().code();
            okhttp3.Response response = ere.response();
            return new ErrorAnswer(response == null ? 0 : response.code(), code == null ? "" : code,
                    response == null ? null : response.header(ErrorAnswer.REGION_HEADER)).failure(where);
        }
        if (e instanceof ServerException se) {
            return new StoreException(StoreException.Kind.UNAVAILABLE,
                    "server error HTTP " + se.statusCode() + ": " + where, null);
        }
        if (e instanceof InvalidResponseException) {
            return new StoreException(StoreException.Kind.UNAVAILABLE, "unreadable response: " + where, null);
        }
        if (e instanceof SSLHandshakeException || e instanceof SSLPeerUnverifiedException) {
            // not retried: a certificate does not become trusted by asking again
            return new StoreException(StoreException.Kind.UNTRUSTED,
                    "TLS certificate of " + config.endpoint() + " not trusted (" + e.getMessage() + "): " + where, null);
        }
        if (e instanceof ConnectException || e instanceof UnknownHostException
                || e instanceof NoRouteToHostException || e instanceof SSLException) {
            return new StoreException(StoreException.Kind.UNREACHABLE,
                    "cannot reach " + config.endpoint() + " (" + e.getMessage() + "): " + where, null);
        }
        if (e instanceof InterruptedIOException || e instanceof IOException) {
            return new StoreException(StoreException.Kind.UNAVAILABLE,
                    e.getClass().getSimpleName() + " (" + e.getMessage() + "): " + where, null);
        }
        return new StoreException(StoreException.Kind.PROTOCOL, e + ": " + where, e);
    }

    @Override
    public void close() {
        credentials.close();
        for (SocketHttp sockets : new SocketHttp[] {socketHttp, socketPut}) {
            if (sockets != null) {
                sockets.close();
            }
        }
        http.dispatcher().executorService().shutdown();
        http.connectionPool().evictAll();
    }
}
