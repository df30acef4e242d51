/**
 * The agent: the object-store side of os2g, which would run on a DPU's cores.
 *
 * <p>It serves read requests from the shim by making sure the chunks of a byte range are staged:
 * {@link io.os2g.agent.ChunkFetcher} fetches a chunk with one ranged GET pinned to the ETag seen at
 * open, straight into reserved staging pages, and publishes its extent; concurrent requests for one
 * chunk share one GET (single flight). Each open handle has a
 * {@link io.os2g.agent.ReadaheadWindow} that starts at 1 MiB and doubles while the reader goes
 * forward, so sequential readers find the next chunks staged before they ask. Fetches run on
 * virtual threads, at most {@link io.os2g.agent.AgentConfig#maxInFlight()} at a time, a reader's
 * before those staged ahead of readers ({@link io.os2g.agent.FetchQueue}). Small files are staged
 * before their open by {@link io.os2g.agent.DirectoryPrefetcher} (a directory, or a tree, being read
 * through, epoch after epoch) and {@link io.os2g.agent.HintedPrefetcher} (an order the loader gave).
 * {@link io.os2g.agent.Uploads} uploads the files a mount writes from the staging pages the shim
 * filled, part by part, and publishes each at close. The agent knows nothing of FUSE: it is driven
 * through {@code io.os2g.link}.
 */
package io.os2g.agent;
