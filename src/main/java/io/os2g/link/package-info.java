/**
 * The boundary between the host shim and the agent.
 *
 * <p>The shim speaks to the agent only through {@link io.os2g.link.AgentLink}, with immutable request
 * values ({@link io.os2g.link.OpenRequest}, {@link io.os2g.link.ReadRequest}) and futures for
 * completions, never with shared objects. {@link io.os2g.link.InProcessLink} delivers them to an
 * agent in the same process; a split-process transport (Unix socket, shared extent index) implements
 * the same interface. In split mode the agent is lent the mount's /dev/fuse and answers the READs
 * itself ({@code ReadAnswerer}): the shim forwards a READ's number, never its bytes.
 * Without that (a region whose pages are reused in place), only misses, opens, first reads into a
 * chunk (readahead hints) and releases cross the link, and the shim reads staged chunks itself.
 */
package io.os2g.link;
