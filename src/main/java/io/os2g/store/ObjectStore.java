package io.os2g.store;

import java.io.IOException;
import java.io.InputStream;

/** The object-store operations os2g needs, each bounded in time and retried where it may help. */
public interface ObjectStore extends Listings, AutoCloseable {

    /** Reads the body of a ranged GET; called again from the start when the GET is retried. */
    @FunctionalInterface
    interface BodyReader {
        /** Consumes exactly the requested number of bytes from {@code body}. */
        void read(InputStream body) throws IOException;
    }

    /**
     * Reads {@code length} bytes of {@code key} from {@code offset}, only if its ETag still equals
     * {@code etag} (If-Match); a changed object fails with {@link StoreException.Kind#CHANGED}.
     */
    void get(String key, long offset, long length, String etag, BodyReader reader);

    /**
     * Checks, before mounting, that the endpoint answers, the credentials are accepted and the bucket
     * exists, by listing at most one key under {@code prefix}. Not retried: the user is waiting.
     */
    void probe(String prefix);

    /**
     * The user metadata of {@code key} ({@code x-amz-meta-NAME} headers, by lower-case NAME), with one HEAD;
     * empty where the store has none to give.
     */
    default java.util.Map<String, String> userMetadata(String key) {
        return java.util.Map.of();
    }

    /**
     * Whether this store decodes {@code key}'s bytes (a decompressed view) rather than reading them as
     * stored: a decoder goes in order and checks its stream only at its end, so such a key's chunks are
     * not readable before they are whole, nor asked for far ahead of the reader.
     */
    default boolean decodes(String key) {
        return false;
    }

    /** The bucket this store reads. */
    String bucket();

    @Override
    void close();
}
