/**
 * The boundary between the host shim and the agent.
 *
 * <p>The shim speaks to the agent only through {@link io.os2g.link.AgentLink}, with immutable request
 * values ({@link io.os2g.link.OpenRequest}, {@link io.os2g.link.ReadRequest}) and futures for
 * completions, never with shared objects. {@link io.os2g.link.InProcessLink} delivers them to an
 * agent in the same process; a split-process transport (Unix socket, shared extent index) implements
 * the same interface. Only misses, opens, first reads into a chunk (readahead hints) and releases
 * cross the link: a read of a staged chunk is served by the shim from the staging region alone.
 */
package io.os2g.link;
