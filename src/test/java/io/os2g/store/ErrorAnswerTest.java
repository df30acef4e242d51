package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** S3 error answers, well-formed, odd and malformed, and what each means. */
@Tag("unit")
class ErrorAnswerTest {

    private static StoreException failure(int status, String body, String regionHeader) {
        return ErrorAnswer.of(status, body.getBytes(StandardCharsets.UTF_8), regionHeader).failure("k");
    }

    private static String error(String code, String extra) {
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>m</Message>" + extra + "</Error>";
    }

    @Test
    void s3ErrorCodesAndBareStatusesDecideTheKind() {
        assertEquals(StoreException.Kind.CHANGED, failure(412, error("PreconditionFailed", ""), null).kind());
        assertEquals(StoreException.Kind.NOT_FOUND, failure(404, error("NoSuchKey", ""), null).kind());
        assertEquals(StoreException.Kind.NO_SUCH_BUCKET, failure(404, error("NoSuchBucket", ""), null).kind());
        assertEquals(StoreException.Kind.BAD_CREDENTIALS, failure(403, error("SignatureDoesNotMatch", ""), null).kind());
        assertEquals(StoreException.Kind.EXPIRED_CREDENTIALS, failure(400, error("ExpiredToken", ""), null).kind());
        assertEquals(StoreException.Kind.ACCESS_DENIED, failure(403, "", null).kind());
        assertEquals(StoreException.Kind.UNAVAILABLE, failure(503, error("SlowDown", ""), null).kind());
        assertEquals(StoreException.Kind.PROTOCOL, failure(501, error("NotImplemented", ""), null).kind(), "not asked again");
        assertEquals(StoreException.Kind.UNAVAILABLE, failure(429, "", null).kind());
        assertEquals(StoreException.Kind.PROTOCOL, failure(400, error("InvalidArgument", ""), null).kind());
    }

    @Test
    void anAnswerThatNamesTheBucketsRegionIsWrongRegionWithThatRegion() {
        // a signature for the wrong region: AWS names the bucket's in the body
        StoreException malformed = failure(400, error("AuthorizationHeaderMalformed", "<Region>eu-west-3</Region>"), null);
        assertEquals(StoreException.Kind.WRONG_REGION, malformed.kind());
        assertEquals("eu-west-3", malformed.region());
        // a redirect to the bucket's regional endpoint: the header names it, the body may be empty (HEAD)
        StoreException moved = failure(301, "", "ap-south-1");
        assertEquals(StoreException.Kind.WRONG_REGION, moved.kind());
        assertEquals("ap-south-1", moved.region());
        assertEquals("us-west-2", failure(301, error("PermanentRedirect", "<Endpoint>b.s3.amazonaws.com</Endpoint>"), "us-west-2").region());
    }

    @Test
    void aRedirectThatNamesNoRegionIsAProtocolErrorNeverFollowed() {
        assertEquals(StoreException.Kind.PROTOCOL, failure(301, error("PermanentRedirect", "<Endpoint>elsewhere</Endpoint>"), null).kind());
        assertEquals(StoreException.Kind.PROTOCOL, failure(307, "", null).kind());
        assertEquals(StoreException.Kind.BAD_CREDENTIALS, failure(400, error("AuthorizationHeaderMalformed", ""), null).kind());
    }

    @Test
    void malformedBodiesAreReadForWhatTheyHoldAndNothingMore() {
        assertEquals(StoreException.Kind.UNAVAILABLE, failure(502, "<html><body>Bad Gateway</body></html>", null).kind());
        assertEquals(StoreException.Kind.PROTOCOL, failure(400, "<Error><Code>" + "x".repeat(500) + "</Code></Error>", null).kind());
        assertNull(failure(400, "<Error><Region>EU WEST</Region></Error>", null).region(), "not a region name");
        assertEquals(StoreException.Kind.NOT_FOUND, failure(404, "\u0000\u00ff<Code", null).kind());
    }
}
