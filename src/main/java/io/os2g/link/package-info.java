/**
 * The transport between the host shim and the agent: messages only, never shared objects.
 *
 * <p>The shim speaks to the agent through {@link io.os2g.link.AgentLink}, with immutable request values
 * ({@link io.os2g.link.OpenRequest}, {@link io.os2g.link.ReadRequest}, {@link io.os2g.link.PrefetchRequest})
 * and futures for completions. {@link io.os2g.link.InProcessLink} delivers them to an agent in the same
 * process; in split mode {@link io.os2g.link.SocketLink} (the shim) and {@link io.os2g.link.AgentServer}
 * (the agent) carry them in length-prefixed frames ({@code Wire}, with a versioned handshake) over a Unix
 * socket or over TCP behind mutual TLS ({@code TlsHandshake}, {@link io.os2g.link.LinkTls}), reconnecting
 * when the agent comes back. Either way only misses, opens, first reads into a chunk (readahead hints)
 * and releases cross the link: the shim reads staged chunks from the staging region itself, with no
 * message. Over TCP that region is the host's own: the agent's {@code ChunkPoster} posts each chunk's
 * bytes after its frame, and the shim receives them into the pages the agent chose
 * ({@link io.os2g.staging.PostedRegion}).
 *
 * <p>Where shim and agent share a kernel, the agent can also write the FUSE replies to READs itself on a
 * {@code /dev/fuse} the shim lends it; the link carries only the messages for that
 * ({@link io.os2g.link.DeviceLender}, {@link io.os2g.link.KernelReplier}) and the package
 * {@code io.os2g.agentreplies} implements them. The link knows no FUSE, contains no policy and never
 * polls.
 */
package io.os2g.link;
