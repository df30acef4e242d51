/**
 * The host shim: the FUSE file system that the kernel calls (libfuse 3 through jfuse, FFM upcalls).
 *
 * <p>It stays thin. {@link io.os2g.host.Os2gFileSystem} translates FUSE calls: metadata from the
 * namespace cache, errors to errnos, every write to EROFS. {@link io.os2g.host.StagedReader} serves a
 * read by copying from the staging region straight into the kernel's buffer (native to native, no
 * heap array between) and crosses the link only on a miss or on the first read into a chunk (the
 * readahead hint). {@link io.os2g.host.FuseMount} owns the mount's lifecycle: mount, wait until the
 * kernel shows it, unmount. The shim holds no HTTP client and no credentials.
 */
package io.os2g.host;
