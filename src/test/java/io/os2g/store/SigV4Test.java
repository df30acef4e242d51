package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.minio.S3Escaper;
import io.minio.Signer;
import io.os2g.support.ManualClock;
import java.time.Clock;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;
import okhttp3.HttpUrl;
import okhttp3.Request;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The GET signer gives the signature AWS documents and the one MinIO's signer gives, for objects and listings. */
@Tag("unit")
class SigV4Test {

    private static final Credentials AWS_EXAMPLE =
            new Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", null);

    private static Clock at(String instant) {
        return Clock.fixed(Instant.parse(instant), ZoneOffset.UTC);
    }

    @Test
    void theGetObjectExampleOfTheS3SignatureDocumentation() {
        // "Example: GET Object" of the Amazon S3 API reference, "Signature Calculations for the
        // Authorization Header: Transferring Payload in a Single Chunk"
        Request request = new Request.Builder().url("https://examplebucket.s3.amazonaws.com/test.txt")
                .header("Host", "examplebucket.s3.amazonaws.com")
                .header("Range", "bytes=0-9")
                .build();
        Request signed = new SigV4(AWS_EXAMPLE, "us-east-1", at("2013-05-24T00:00:00Z")).sign(request);
        assertEquals("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
                signed.header("Authorization"));
        assertEquals("20130524T000000Z", signed.header("x-amz-date"));
        assertEquals(SigV4.EMPTY_SHA256, signed.header("x-amz-content-sha256"));
    }

    @Test
    void theSameSignatureAsMinioGivesForTheAgentsGets() throws Exception {
        Credentials withToken = new Credentials("os2g-demo", "os2g-demo-secret", "a-session/token+x=");
        HttpUrl bucket = HttpUrl.get("http://127.0.0.1:9000/bench/");
        List<String> keys = List.of("small/c003/img-00042.jpg", "a b/c+d=e&f.jpg", "ünï/cödé 100%.bin", "x/(1)!'*~;,@$.txt");
        for (Credentials credentials : List.of(AWS_EXAMPLE, withToken)) {
            for (String key : keys) {
                for (String region : List.of("us-east-1", "eu-west-3")) {
                    Request request = new Request.Builder()
                            .url(bucket.newBuilder().addEncodedPathSegments(S3Escaper.encodePath(key)).build())
                            .header("Host", "127.0.0.1:9000")
                            .header("Accept-Encoding", "identity")
                            .header("Range", "bytes=8388608-16777215")
                            .header("If-Match", "\"9b2cf535f27731c974343645a3985328\"")
                            .build();
                    // two days apart: the second call derives a new signing key
                    for (String day : List.of("2026-12-02T23:59:59Z", "2026-12-03T00:00:01Z")) {
                        Request ours = new SigV4(credentials, region, at(day)).sign(request);
                        Request minio = Signer.signV4S3(ours.newBuilder().removeHeader("Authorization").build(), region,
                                credentials.accessKeyId(), credentials.secretAccessKey(), SigV4.EMPTY_SHA256);
                        assertEquals(minio.header("Authorization"), ours.header("Authorization"), key + " " + region + " " + day);
                    }
                }
            }
        }
    }

    @Test
    void oneSignerAcrossMidnightSignsEachDayWithItsOwnKey() {
        ManualClock clock = new ManualClock(Instant.parse("2026-12-02T23:59:59Z"));
        SigV4 signer = new SigV4(AWS_EXAMPLE, "us-east-1", clock);
        Request request = new Request.Builder().url("http://h/b/k").header("Host", "h").build();
        String before = signer.sign(request).header("Authorization");
        clock.set(Instant.parse("2026-12-03T00:00:01Z"));
        String after = signer.sign(request).header("Authorization");
        String fresh = new SigV4(AWS_EXAMPLE, "us-east-1", clock).sign(request).header("Authorization");
        assertEquals(fresh, after, "the cached key of the day before is not reused");
        assertNotEquals(before, after);
    }

    @Test
    void theSameSignatureAsMinioGivesForTheAgentsListings() throws Exception {
        List<String> prefixes = List.of("", "small/c003/", "a b/c+d=e&f/", "ünï/cödé 100%/", "x/(1)!'*~;,@$/");
        for (String prefix : prefixes) {
            for (String token : new String[] {null, "1/AbC+dEf==", "next page"}) {
                java.util.Map<String, String> query = new java.util.LinkedHashMap<>();
                query.put("list-type", "2");
                query.put("delimiter", "/");
                query.put("encoding-type", "url");
                query.put("max-keys", "1000");
                if (!prefix.isEmpty()) {
                    query.put("prefix", prefix);
                }
                if (token != null) {
                    query.put("continuation-token", token);
                }
                HttpUrl.Builder url = HttpUrl.get("http://127.0.0.1:9000/bench").newBuilder();
                query.forEach((name, value) -> url.addEncodedQueryParameter(S3Escaper.encode(name), S3Escaper.encode(value)));
                Request request = new Request.Builder().url(url.build()).header("Host", "127.0.0.1:9000").build();
                Request ours = new SigV4(AWS_EXAMPLE, "eu-west-3", at("2026-12-03T16:30:00Z")).sign(request);
                Request minio = Signer.signV4S3(ours.newBuilder().removeHeader("Authorization").build(), "eu-west-3",
                        AWS_EXAMPLE.accessKeyId(), AWS_EXAMPLE.secretAccessKey(), SigV4.EMPTY_SHA256);
                assertEquals(minio.header("Authorization"), ours.header("Authorization"), prefix + " " + token);
            }
        }
    }

    @Test
    void aQueryNameGivenTwiceIsRefusedRatherThanSignedWrong() {
        Request request = new Request.Builder().url("http://h/b?prefix=a&prefix=b").build();
        SigV4 signer = new SigV4(AWS_EXAMPLE, "us-east-1", Clock.systemUTC());
        assertThrows(IllegalArgumentException.class, () -> signer.sign(request));
        assertThrows(IllegalArgumentException.class, () -> new SigV4(Credentials.anonymous(), "us-east-1", Clock.systemUTC()));
    }

    @Test
    void amzDateIsZeroPadded() {
        assertEquals("00070102T030405Z", SigV4.amzDate(LocalDateTime.of(7, 1, 2, 3, 4, 5)));
        assertEquals("20261203T235959Z", SigV4.amzDate(LocalDateTime.of(2026, 12, 3, 23, 59, 59)));
    }

    @Test
    void renewedCredentialsAreSignedWithTheirOwnKeyTheSameDay() {
        Credentials first = new Credentials("ASIAFIRST", "secret-1", "token-1");
        Credentials second = new Credentials("ASIASECOND", "secret-2", "token-2");
        java.util.concurrent.atomic.AtomicReference<Credentials> current = new java.util.concurrent.atomic.AtomicReference<>(first);
        Clock clock = at("2026-12-04T12:00:00Z");
        SigV4 renewing = new SigV4(current::get, "us-east-1", clock);
        Request request = new Request.Builder().url("http://127.0.0.1:9000/bench/k").header("Host", "127.0.0.1:9000").build();
        assertEquals(new SigV4(first, "us-east-1", clock).sign(request).header("Authorization"),
                renewing.sign(request).header("Authorization"));
        current.set(second);
        Request signed = renewing.sign(request);
        assertEquals(new SigV4(second, "us-east-1", clock).sign(request).header("Authorization"), signed.header("Authorization"),
                "the day's key derived again for the renewed secret");
        assertEquals("token-2", signed.header("X-Amz-Security-Token"));
    }
}
