package io.os2g.s3server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.minio.GetObjectArgs;
import io.minio.GetObjectResponse;
import io.minio.MakeBucketArgs;
import io.minio.MinioClient;
import io.minio.PutObjectArgs;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The S3 server the demo and the benchmarks run: what a client of it sees on the wire. */
@Tag("s3")
class S3ServerTest {

    private static final byte[] BODY = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path dir;

    @Test
    void aRangedGetWithLatencyCarriesItsContentRangeAndItsBytes() throws Exception {
        try (S3Server server = S3Server.start(dir, 0, 20, null)) {
            MinioClient client = client(server);
            long start = System.nanoTime();
            try (GetObjectResponse got = client.getObject(GetObjectArgs.builder().bucket("data").object("k")
                    .offset(4L).length(6L).build())) {
                long waitedMillis = (System.nanoTime() - start) / 1_000_000;
                // what rclone reads the object's size from: without it, it took the range's length for
                // the size and asked for an empty range next
                assertEquals("bytes 4-9/16", got.headers().get("Content-Range"));
                assertArrayEquals(Arrays.copyOfRange(BODY, 4, 10), got.readAllBytes());
                assertTrue(waitedMillis >= 20, "the GET was answered after " + waitedMillis + " ms, not after its 20 ms delay");
            }
        }
    }

    @Test
    void withoutLatencyARangedGetCarriesItsContentRangeToo() throws Exception {
        try (S3Server server = S3Server.start(dir, 0, 0, null)) {
            try (GetObjectResponse got = client(server).getObject(GetObjectArgs.builder().bucket("data").object("k")
                    .offset(10L).length(6L).build())) {
                assertEquals("bytes 10-15/16", got.headers().get("Content-Range"));
                assertArrayEquals(Arrays.copyOfRange(BODY, 10, 16), got.readAllBytes());
            }
        }
    }

    private static MinioClient client(S3Server server) throws Exception {
        MinioClient client = MinioClient.builder().endpoint(server.endpoint().toString())
                .credentials(S3Server.ACCESS_KEY, S3Server.SECRET_KEY).build();
        client.makeBucket(MakeBucketArgs.builder().bucket("data").build());
        client.putObject(PutObjectArgs.builder().bucket("data").object("k")
                .stream(new ByteArrayInputStream(BODY), BODY.length, -1).build());
        return client;
    }
}
