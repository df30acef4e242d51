package io.os2g.store;

import io.os2g.LogText;
import io.os2g.WarningLimiter;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.xml.stream.XMLInputFactory;
import javax.xml.stream.XMLStreamConstants;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamReader;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One directory level of a bucket: ListObjectsV2 with delimiter {@code /}, page after page, each page
 * one synchronous OkHttp call signed by {@link SigV4}, its XML read with StAX as it streams in.
 *
 * <p>Why not {@code MinioClient.listObjects}: it binds each page to objects through Simple XML (reflection
 * and annotation lookups per element) and parses every date with a {@code java.time} formatter into a
 * {@code ZonedDateTime}, several times the CPU per key of reading the XML as it streams.
 */
final class ListObjectsV2 {

    /** Keys per page: S3's most. */
    private static final int PAGE = 1000;
    /**
     * Heap a listed entry may take, for {@link #maxEntries}: its summary here, its node and inode in the
     * namespace (about half of this), and room for the rest of the process.
     */
    private static final long BYTES_PER_ENTRY = 1024;
    private static final Logger LOG = LoggerFactory.getLogger(ListObjectsV2.class);
    private static final WarningLimiter WARNINGS = new WarningLimiter(LOG);
    private static final XMLInputFactory XML = xmlInputFactory();

    private final OkHttpClient http;
    private final BucketEndpoint endpoint;

    ListObjectsV2(OkHttpClient http, BucketEndpoint endpoint) {
        this.http = http;
        this.endpoint = endpoint;
    }

    private static XMLInputFactory xmlInputFactory() {
        XMLInputFactory factory = XMLInputFactory.newFactory();
        factory.setProperty(XMLInputFactory.SUPPORT_DTD, false); // a listing has none; no entity is ever fetched
        factory.setProperty(XMLInputFactory.IS_SUPPORTING_EXTERNAL_ENTITIES, false);
        factory.setProperty(XMLInputFactory.IS_COALESCING, true);
        return factory;
    }

    /**
     * The most entries one directory's listing may have: what this process's heap holds
     * ({@code -Xmx}, {@code OS2G_JAVA_OPTS}), so that a huge flat prefix, or a server that pages on
     * forever, is a clear error rather than an OutOfMemoryError.
     */
    static int maxEntries() {
        return (int) Math.min(Integer.MAX_VALUE - 1, Math.max(PAGE, Runtime.getRuntime().maxMemory() / BYTES_PER_ENTRY));
    }

    /**
     * The objects and common prefixes directly under {@code prefix}, at most {@code limit} of them together.
     * Throws {@link StoreException} for an error answer or a page that is not a listing, {@link IOException}
     * for a transport failure. Keys outside {@code prefix} and keys that are not UTF-8 are left out (and
     * logged): a server's answer never names what was not asked for.
     */
    Listing list(String prefix, int limit) throws IOException {
        List<ObjectSummary> objects = new ArrayList<>();
        List<String> prefixes = new ArrayList<>();
        String what = "bucket=" + endpoint.bucket() + ", prefix=" + prefix;
        String token = null;
        // pages that add nothing still end: a server cannot page on forever
        long pagesLeft = Math.max(1000, limit / 10);
        do {
            if (--pagesLeft < 0) {
                throw new StoreException(StoreException.Kind.PROTOCOL, "the listing went on for more pages than its entries need: " + what, null);
            }
            Map<String, String> query = new LinkedHashMap<>();
            query.put("list-type", "2");
            query.put("delimiter", "/");
            // keys as URL-encoded text: a key may hold characters that XML 1.0 cannot carry
            query.put("encoding-type", "url");
            query.put("max-keys", Integer.toString(Math.min(PAGE, limit - objects.size() - prefixes.size())));
            if (!prefix.isEmpty()) {
                query.put("prefix", prefix);
            }
            if (token != null) {
                query.put("continuation-token", token);
            }
            Request request = endpoint.sign(new Request.Builder().url(endpoint.bucket(query)).get());
            String next;
            try (Response response = http.newCall(request).execute()) {
                if (response.code() != 200) {
                    throw ErrorAnswer.of(response).failure(what);
                }
                next = page(response.body().byteStream(), prefix, objects, prefixes, what);
            }
            if (next != null && next.equals(token)) {
                throw new StoreException(StoreException.Kind.PROTOCOL, "the listing gave the same continuation token twice: " + what, null);
            }
            token = next;
        } while (token != null && objects.size() + prefixes.size() < limit);
        return new Listing(prefix, objects, prefixes);
    }

    /** Reads one page into {@code objects} and {@code prefixes}; returns the next page's token, or null after the last. */
    private static String page(InputStream body, String prefix, List<ObjectSummary> objects, List<String> prefixes, String what) {
        List<ObjectSummary> pageObjects = new ArrayList<>();
        List<String> pagePrefixes = new ArrayList<>();
        boolean truncated = false;
        boolean urlEncoded = false;
        boolean listing = false;
        String next = null;
        try {
            XMLStreamReader xml = XML.createXMLStreamReader(body);
            try {
                boolean inContents = false;
                boolean inPrefixes = false;
                String key = null;
                String etag = "";
                long size = -1;
                long modified = 0;
                while (xml.hasNext()) {
                    int event = xml.next();
                    if (event == XMLStreamConstants.START_ELEMENT) {
                        switch (xml.getLocalName()) {
                            case "ListBucketResult" -> listing = true;
                            case "Contents" -> {
                                inContents = true;
                                key = null;
                                etag = "";
                                size = -1;
                                modified = 0;
                            }
                            case "CommonPrefixes" -> inPrefixes = true;
                            case "Key" -> key = inContents ? xml.getElementText() : key;
                            case "ETag" -> etag = inContents ? ObjectSummary.unquote(xml.getElementText()) : etag;
                            case "Size" -> size = inContents ? Long.parseLong(xml.getElementText().strip()) : size;
                            case "LastModified" -> modified = inContents ? Instant.parse(xml.getElementText().strip()).toEpochMilli() : modified;
                            case "Prefix" -> {
                                if (inPrefixes) {
                                    pagePrefixes.add(xml.getElementText());
                                }
                            }
                            case "IsTruncated" -> truncated = Boolean.parseBoolean(xml.getElementText().strip());
                            case "NextContinuationToken" -> next = xml.getElementText();
                            case "EncodingType" -> urlEncoded = "url".equals(xml.getElementText().strip());
                            default -> { }
                        }
                    } else if (event == XMLStreamConstants.END_ELEMENT) {
                        switch (xml.getLocalName()) {
                            case "Contents" -> {
                                if (key == null || size < 0) {
                                    throw new StoreException(StoreException.Kind.PROTOCOL, "a listed object without a key or size: " + what, null);
                                }
                                pageObjects.add(new ObjectSummary(key, size, etag, modified));
                                inContents = false;
                            }
                            case "CommonPrefixes" -> inPrefixes = false;
                            default -> { }
                        }
                    }
                }
            } finally {
                xml.close();
            }
        } catch (XMLStreamException | NumberFormatException | DateTimeParseException e) {
            throw new StoreException(StoreException.Kind.UNAVAILABLE, "unreadable listing (" + e.getMessage() + "): " + what, e);
        }
        if (!listing) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "the answer to a listing was not a ListBucketResult: " + what, null);
        }
        if (truncated && (next == null || next.isEmpty())) {
            throw new StoreException(StoreException.Kind.PROTOCOL, "a truncated listing without a continuation token: " + what, null);
        }
        for (ObjectSummary o : pageObjects) {
            String key = urlEncoded ? decode(o.key()) : o.key();
            if (listed(key, prefix, what)) {
                objects.add(urlEncoded ? new ObjectSummary(key, o.size(), o.etag(), o.lastModifiedMillis()) : o);
            }
        }
        for (String p : pagePrefixes) {
            String common = urlEncoded ? decode(p) : p;
            if (listed(common, prefix, what)) {
                prefixes.add(common);
            }
        }
        return truncated ? next : null;
    }

    /** Whether a listed key (or common prefix) is UTF-8 and under the listed prefix; logs the ones that are not. */
    private static boolean listed(String key, String prefix, String what) {
        if (key == null) {
            WARNINGS.warn("listing-utf8", "skipping a key that is not URL-encoded UTF-8 in the listing of {}", what);
            return false;
        }
        if (!key.startsWith(prefix)) {
            WARNINGS.warn("listing-prefix", "skipping key {} outside the listed prefix in the listing of {}", LogText.quote(key), what);
            return false;
        }
        return true;
    }

    /**
     * The text of a URL-encoded key; null when it is not well encoded or its bytes are not UTF-8 (two
     * keys differing in such a byte would otherwise collapse into one name).
     */
    static String decode(String encoded) {
        ByteBuffer bytes = ByteBuffer.allocate(encoded.length() * 3);
        for (int i = 0; i < encoded.length(); ) {
            if (encoded.charAt(i) == '%') {
                if (i + 2 >= encoded.length()) {
                    return null;
                }
                int hi = Character.digit(encoded.charAt(i + 1), 16);
                int lo = Character.digit(encoded.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    return null;
                }
                bytes.put((byte) (hi << 4 | lo));
                i += 3;
            } else {
                int end = encoded.indexOf('%', i);
                end = end < 0 ? encoded.length() : end;
                bytes.put(encoded.substring(i, end).replace('+', ' ').getBytes(StandardCharsets.UTF_8));
                i = end;
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(bytes.flip()).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
