package io.os2g.staging;

import java.nio.file.Path;

/** Bytes of a staged chunk as a consumer maps them: {@code length} bytes at {@code offset} in {@code segment}. */
public record Extent(Path segment, long offset, long length) {
}
