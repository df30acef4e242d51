/**
 * A self-contained Java binding of the Linux kernel's FUSE protocol over {@code /dev/fuse}, with the
 * FFM API and no libfuse; it imports nothing else of os2g.
 *
 * <p>{@link io.os2g.fuse.FuseMounter} opens {@code /dev/fuse} and mounts (mount(2) as root,
 * {@code fusermount3} otherwise). {@link io.os2g.fuse.FuseSession} then serves the mount: its threads
 * read one request each, negotiate INIT by protocol minor and page size ({@link io.os2g.fuse.Negotiation}),
 * call the {@link io.os2g.fuse.FuseFileSystem} (nodes by number,
 * small reply values) and write the reply; a failure is a {@link io.os2g.fuse.FuseException}, or the
 * file system's own exception mapped once by {@link io.os2g.fuse.FuseFileSystem#errnoOf}. Metadata
 * replies are small and copied ({@code SmallReply}); a READ's reply is built in a pipe
 * ({@code PipedReply}, behind {@link io.os2g.fuse.ReadReply}) from memory or by splice from a file's
 * pages, so that the kernel copies file bytes once, into the reader's page cache; an open may instead
 * name a backing file that the kernel reads itself (passthrough). A READ the kernel interrupts is
 * answered EINTR ({@link io.os2g.fuse.ReadReply#whenInterrupted}); one larger than a pipe holds is
 * assembled in memory ({@code MemoryReply}).
 *
 * <p>A session may also leave a READ to another process that holds the same open {@code /dev/fuse}
 * ({@link io.os2g.fuse.ReadReply#forward}, {@link io.os2g.fuse.ForwardedRead}): the descriptor is lent
 * with SCM_RIGHTS ({@link io.os2g.fuse.DeviceHandoff}) and that process writes the reply
 * ({@link io.os2g.fuse.LentDeviceReplies}). Structs are read and written by the named fields of
 * {@code FuseAbi}, the layouts of {@code include/uapi/linux/fuse.h}; {@code FuseWorkers} are the serving
 * threads; {@code docs/FUSE-PROTOCOL.md} lists the opcodes and INIT flags used.
 */
package io.os2g.fuse;
