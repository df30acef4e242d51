package io.os2g.link;

/** Open one object version for reading. */
public record OpenRequest(long inode, String key, String etag, long size) {
}
