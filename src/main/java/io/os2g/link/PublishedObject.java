package io.os2g.link;

import io.os2g.store.ObjectSummary;

/**
 * An object a write through the mount put in the bucket: what the shim's namespace shows for it at once.
 *
 * @param etag entity tag without quotes
 */
public record PublishedObject(String key, long size, String etag, long lastModifiedMillis) {

    static PublishedObject of(ObjectSummary object) {
        return new PublishedObject(object.key(), object.size(), object.etag(), object.lastModifiedMillis());
    }
}
