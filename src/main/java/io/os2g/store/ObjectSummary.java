package io.os2g.store;

import java.util.Objects;

/**
 * One object as a listing reports it: everything {@code stat} needs, so that no HEAD is sent per file.
 *
 * @param key full object key
 * @param size size in bytes
 * @param etag entity tag without quotes; pins the object version for ranged reads
 * @param lastModifiedMillis last-modified time, epoch milliseconds
 */
public record ObjectSummary(String key, long size, String etag, long lastModifiedMillis) {

    /** An ETag as a store answers it ({@code "abc-3"}, quoted, maybe padded) as os2g keeps it; "" for none. */
    static String unquote(String etag) {
        if (etag == null) {
            return "";
        }
        String e = etag.strip();
        return e.length() >= 2 && e.startsWith("\"") && e.endsWith("\"") ? e.substring(1, e.length() - 1) : e;
    }

    public ObjectSummary {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(etag, "etag");
        if (size < 0) {
            throw new IllegalArgumentException("negative size: key=" + key + ", size=" + size);
        }
    }
}
