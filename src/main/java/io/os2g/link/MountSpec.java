package io.os2g.link;

/**
 * What a shim asks of an agent for one mount, sent in the handshake: the agent opens the bucket,
 * a staging region of that size and chunk layout, and a namespace with that TTL.
 *
 * @param metadataTtlSeconds how long listings are trusted; -1 for forever
 * @param expandTar show each {@code NAME.tar} object also as a directory {@code NAME.tar.d/} of its members
 * @param decompress show each {@code NAME.gz} and {@code NAME.zst} object also as {@code NAME}, decompressed
 * @param gpuDevice the CUDA device to register the staging region with; -1 for the agent's default
 * @param writes whether files are written through the mount (the agent uploads them)
 */
public record MountSpec(String bucket, String prefix, long stagingSize, long chunkSize, long maxReadahead,
                        int dirPrefetch, long metadataTtlSeconds, boolean expandTar,
                        boolean decompress, int gpuDevice, boolean writes) {
}
