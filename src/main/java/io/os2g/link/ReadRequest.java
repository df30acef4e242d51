package io.os2g.link;

/** Stage {@code [offset, offset + length)} of an open handle, and let its readahead run on. */
public record ReadRequest(long handle, long offset, long length) {
}
