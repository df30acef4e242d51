/**
 * The host shim: the FUSE file system that the kernel calls, through {@link io.os2g.fuse.FuseSession}.
 *
 * <p>It stays thin. {@link io.os2g.host.Os2gFileSystem} translates FUSE calls: metadata from the
 * namespace cache, every os2g failure mapped once to its errno. {@link io.os2g.host.Writes} makes the
 * changes S3 can make (new files written in order into staging pages the agent uploads from, published
 * at close; deletes, renames) where the mount allows them, and refuses the rest with their errno.
 * {@link io.os2g.host.StagedReader} serves a read by splicing the staging region's pages into the reply
 * (or copying them, where a reply pipe cannot take them) and crosses the link only on a miss or on the
 * first read into a chunk (the readahead hint); where the agent replies to READs itself, the shim
 * forwards the READ instead. {@link io.os2g.host.ControlFiles} are the files of {@code /.os2g/} (stats,
 * prefetch hints, warm, extent leases). {@link io.os2g.host.FuseMount} owns the mount's lifecycle:
 * mount, wait until the kernel shows it, unmount. The shim holds no HTTP client and no credentials.
 */
package io.os2g.host;
