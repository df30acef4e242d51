/**
 * Decoders of object formats, free of any transport: they read through a {@link io.os2g.codec.RangeSource}
 * that the agent backs with ranged GETs.
 *
 * <p>{@link io.os2g.codec.TarIndex}: where each member of a tar shard lies (data offset and size), built
 * from the member headers alone (commons-compress, over a {@link io.os2g.codec.RangeChannel} that fetches
 * the windows the headers fall in, not the members between them), or read from a sidecar index object.
 *
 * <p>{@link io.os2g.codec.Compression}: gzip and zstd (java.util.zip, zstd-jni) decoders and the
 * decompressed size each format states, over a {@link io.os2g.codec.RangeInputStream} that reads the
 * compressed object window by window, one window ahead.
 */
package io.os2g.codec;
