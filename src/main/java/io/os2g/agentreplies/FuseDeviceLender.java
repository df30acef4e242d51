package io.os2g.agentreplies;

import io.os2g.fuse.DeviceHandoff;
import io.os2g.link.DeviceLender;
import java.io.IOException;
import java.nio.file.Path;

/** The shim lending its mount's /dev/fuse to an agent session's {@link AgentReplier}, by SCM_RIGHTS on the session's handoff socket. */
public final class FuseDeviceLender implements DeviceLender {

    private final int device;

    /** @param device the mount's /dev/fuse descriptor (the session keeps its own; the agent gets a copy) */
    public FuseDeviceLender(int device) {
        this.device = device;
    }

    @Override
    public void lendTo(Path sessionDirectory) throws IOException {
        DeviceHandoff.send(device, sessionDirectory.resolve(AgentReplier.HANDOFF));
    }
}
