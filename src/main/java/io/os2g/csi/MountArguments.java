package io.os2g.csi;

import java.util.List;
import java.util.Map;

/** Turns a volume's attributes and mount options into the words of an {@code os2g mount} command, checked. */
@FunctionalInterface
public interface MountArguments {

    /**
     * The source ({@code BUCKET[/PREFIX]}) first, then the options; the mount point, the staging dir and
     * the credentials are the plugin's to add.
     *
     * @param options the capability's mount_flags that are os2g options, in the attributes' spelling
     * @throws CsiException INVALID_ARGUMENT naming the attribute or option that is unknown, malformed or not allowed
     */
    List<String> of(Map<String, String> attributes, Map<String, String> options) throws CsiException;
}
