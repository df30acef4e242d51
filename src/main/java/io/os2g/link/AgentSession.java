package io.os2g.link;

import io.os2g.agent.Agent;
import io.os2g.staging.StagingView;

/** One mount an agent process serves for one shim connection; closed when the connection ends. */
public interface AgentSession extends AutoCloseable {

    Agent agent();

    /** Where the mount's staging region is, for the shim to map. */
    StagingLayout layout();

    /** The staging region as the agent reads it, to answer READs on a lent /dev/fuse. */
    StagingView view();

    /** The agent's counters for this mount, as a JSON object. */
    String statsJson();

    /** Frees the mount's staging region and its connections to the store. */
    @Override
    void close();

    /** Opens sessions; a failure's message is sent to the shim as the reason it was refused. */
    @FunctionalInterface
    interface Factory {
        AgentSession open(MountSpec spec);
    }
}
