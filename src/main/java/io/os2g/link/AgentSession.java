package io.os2g.link;

import io.os2g.agent.Agent;
import io.os2g.agent.Uploads;
import io.os2g.staging.ExtentIndex;
import java.util.List;

/** One mount an agent process serves for one shim connection; closed when the connection ends. */
public interface AgentSession extends AutoCloseable {

    Agent agent();

    /** The mount's extent index: where chunks are placed, here and in a shim's region on another machine. */
    ExtentIndex index();

    /** Where the mount's written files go; null for a mount that writes nothing. */
    Uploads uploads();

    /** Where the mount's staging region is, for the shim to map. */
    StagingRegionSpec layout();

    /** How this session replies to READs on a /dev/fuse the shim lends it; null where it cannot. */
    KernelReplier kernelReplier();

    /** The agent's counters for this mount, as a JSON object. */
    String statsJson();

    /** Frees the mount's staging region and its connections to the store. */
    @Override
    void close();

    /**
     * How a session reaches a shim's own staging region on another machine: its index posts there
     * through {@code mirror}, and starts with what that region {@code held} from an earlier session.
     */
    record Posting(ExtentIndex.Mirror mirror, List<ExtentIndex.Held> held) {
    }

    /** Opens sessions; a failure's message is sent to the shim as the reason it was refused. */
    @FunctionalInterface
    interface Factory {
        /** @param posting null where the shim maps this side's region (one kernel) */
        AgentSession open(MountSpec spec, Posting posting);
    }
}
