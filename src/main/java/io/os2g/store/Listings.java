package io.os2g.store;

/**
 * Where a namespace gets its directory levels: the store itself where the agent is in process, the
 * agent over the link where it is not. The only I/O the namespace does.
 */
@FunctionalInterface
public interface Listings {

    /** Lists one directory level under {@code prefix} (ListObjectsV2, delimiter {@code /}, all pages). */
    Listing list(String prefix);
}
