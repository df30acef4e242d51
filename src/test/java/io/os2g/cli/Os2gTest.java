package io.os2g.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class Os2gTest {

    @Test
    void aNamedCommandIsTheOnlyOneBuilt() {
        assertEquals(List.of("mount"), List.copyOf(Os2g.commandLine("mount").getSubcommands().keySet()));
        assertEquals(List.of("agent"), List.copyOf(Os2g.commandLine("agent").getSubcommands().keySet()));
    }

    @Test
    void helpAndUnknownNamesGetEveryCommand() {
        List<String> all = List.of("mount", "agent", "csi", "csi-mounter", "stats", "warm", "index", "cache", "demo", "s3-server");
        assertEquals(all, List.copyOf(Os2g.commandLine("").getSubcommands().keySet()));
        assertEquals(all, List.copyOf(Os2g.commandLine("--help").getSubcommands().keySet()));
        assertEquals(all, List.copyOf(Os2g.commandLine("mont").getSubcommands().keySet()));
    }

    @Test
    void anUnknownCommandIsAUsageError() {
        assertEquals(Os2g.USAGE, Os2g.run("mont", "bucket", "/mnt"));
    }
}
