package io.os2g.store;

import java.util.List;

/**
 * One directory level of a bucket: the objects directly under a prefix and the common prefixes
 * (sub-directories) found with the {@code /} delimiter, across all pages.
 */
public record Listing(String prefix, List<ObjectSummary> objects, List<String> commonPrefixes) {
    public Listing {
        objects = List.copyOf(objects);
        commonPrefixes = List.copyOf(commonPrefixes);
    }
}
