/**
 * Agent replies: the agent writing the FUSE replies to READs itself, where it shares the host's kernel
 * (the agent on cores set aside for it, not on a DPU).
 *
 * <p>The shim lends the mount's /dev/fuse descriptor to the agent session
 * ({@link io.os2g.agentreplies.FuseDeviceLender}, SCM_RIGHTS over a socket in the session's 0700
 * staging directory) and then forwards each READ's request number over the link instead of reading
 * the staged pages itself; {@link io.os2g.agentreplies.AgentReplier} splices the pages to the kernel
 * and tells the shim what it sent. This is an optimisation only: a descriptor cannot cross to another
 * kernel, so an agent on a DPU (or any agent that cannot take the descriptor, or a mount with
 * {@code --agent-replies off}) leaves every reply to the shim, which reads staged chunks from the
 * region with no message. The link and the agent know nothing of FUSE; this package joins them.
 */
package io.os2g.agentreplies;
