package io.os2g.csi;

import java.util.List;
import java.util.Map;

/** Turns a volume's attributes into the words of an {@code os2g mount} command, checked. */
@FunctionalInterface
public interface MountArguments {

    /**
     * The source ({@code BUCKET[/PREFIX]}) first, then the options; the mount point, the staging dir and
     * the credentials are the plugin's to add.
     *
     * @throws CsiException INVALID_ARGUMENT naming the attribute that is unknown, malformed or not allowed
     */
    List<String> of(Map<String, String> attributes) throws CsiException;
}
