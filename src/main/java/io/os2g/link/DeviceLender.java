package io.os2g.link;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The shim's side of agent replies: hands the mount's /dev/fuse descriptor to the agent session whose
 * staging directory is {@code sessionDirectory}, ahead of the link's {@code Lend} message. Works only
 * where shim and agent share a kernel; where it fails, the shim replies to every READ itself.
 */
@FunctionalInterface
public interface DeviceLender {
    void lendTo(Path sessionDirectory) throws IOException;
}
