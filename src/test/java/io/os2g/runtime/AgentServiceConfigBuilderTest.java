package io.os2g.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The rules of an agent process's options ({@code os2g agent}). */
@Tag("unit")
class AgentServiceConfigBuilderTest {

    @TempDir
    Path staging;

    private AgentServiceConfigBuilder agent() {
        return new AgentServiceConfigBuilder("unix:/run/os2g/agent.sock").store(bucket -> null, Duration.ofSeconds(60), 32).stagingDir(staging);
    }

    private static String refusal(AgentServiceConfigBuilder builder) {
        return assertThrows(UsageError.class, builder::build).getMessage();
    }

    @Test
    void theSocketAndTheDefaults() {
        AgentServiceConfig config = agent().build();
        assertEquals(new io.os2g.link.LinkAddress.Unix(Path.of("/run/os2g/agent.sock")), config.listen());
        assertEquals(staging, config.stagingDir());
        assertEquals(-1, config.gpuDevice());
        assertEquals(null, config.cache());
        assertTrue(refusal(new AgentServiceConfigBuilder("/run/agent.sock")).contains("unix:PATH"));
    }

    @Test
    void aTcpListenerOffLoopbackTakesMutualTlsOnly() {
        String offLoopback = "tcp://0.0.0.0:7070";
        assertTrue(refusal(new AgentServiceConfigBuilder(offLoopback).store(agent().build().storeOf(), java.time.Duration.ofSeconds(1), 1))
                .contains("reachable from other machines"));
        assertTrue(refusal(agent().link(null, null, null, "off")).contains("for a tcp:// link"));
        assertTrue(refusal(new AgentServiceConfigBuilder("tcp://127.0.0.1:0").link(null, null, null, "off"))
                .contains("--link-encryption off needs"));
        assertTrue(refusal(new AgentServiceConfigBuilder("tcp://127.0.0.1:0").link(null, null, null, "maybe"))
                .contains("--link-encryption must be on or off"));
        assertTrue(refusal(new AgentServiceConfigBuilder("tcp://127.0.0.1:0").memory("lots")).contains("--agent-memory"));
        assertEquals(new io.os2g.link.LinkAddress.Tcp("127.0.0.1", 0), new AgentServiceConfigBuilder("tcp://127.0.0.1:0").build().listen());
    }

    @Test
    void itsPolicyIsCheckedAndPrefixesEndInASlash() {
        AgentServiceConfig config = agent().policy(List.of("data", "data/train"), true, true, false).build();
        assertEquals(List.of("data", "data/train/"), config.policy().sources());
        assertTrue(config.policy().writes() && config.policy().overwrite() && !config.policy().delete());
        assertTrue(refusal(agent().policy(List.of("/data"), false, false, false)).contains("--serve must be BUCKET"));
        assertTrue(refusal(agent().policy(List.of(), false, true, false)).contains("--allow-overwrite needs --allow-writes"));
        assertTrue(refusal(agent().policy(List.of(), false, false, true)).contains("--allow-delete needs --allow-writes"));
    }

    @Test
    void aGpuAndADiskCacheAreChecked() {
        assertEquals(1, agent().gpu(1).build().gpuDevice());
        assertTrue(refusal(agent().gpu(-1)).contains("--gpu"));
        assertEquals(1L << 30, agent().cache(staging, "1G", 5).build().cache().maxBytes());
        assertTrue(refusal(agent().cache(null, "1G", 5)).contains("--cache-size needs --cache-dir"));
    }
}
