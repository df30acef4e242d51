package io.os2g.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@Tag("unit")
class CredentialsChainTest {

    /** A source that answers with {@code answer}, or fails (configured or not) while it is null. */
    private static final class Source implements CredentialsSource {
        final String name;
        final boolean configured;
        Credentials answer;
        int asked;

        Source(String name, boolean configured, Credentials answer) {
            this.name = name;
            this.configured = configured;
            this.answer = answer;
        }

        @Override
        public Credentials fetch() {
            asked++;
            if (answer == null) {
                throw new Unavailable(name + ": " + (configured ? "its endpoint refused the connection" : "not set up"), configured, null);
            }
            return answer;
        }

        @Override
        public String name() {
            return name;
        }
    }

    @Test
    void theFirstSourceWithCredentialsAnswersAndIsAskedAloneFromThenOn() {
        Source env = new Source("environment", false, null);
        Source profile = new Source("profile default", false, new Credentials("p", "s", null));
        Source imds = new Source("instance metadata", true, new Credentials("i", "s", "t"));
        CredentialsChain chain = new CredentialsChain(List.of(env, profile, imds));
        assertEquals("p", chain.fetch().accessKeyId());
        assertEquals("profile default", chain.name());
        env.answer = new Credentials("e", "s", null);
        assertEquals("p", chain.fetch().accessKeyId(), "no silent switch to another identity");
        assertEquals(1, env.asked);
        assertEquals(0, imds.asked);
    }

    @Test
    void noCredentialsNamesEverySourceTriedAndWhatFailedWhereOneIsSetUp() {
        Source env = new Source("environment", false, null);
        Source container = new Source("container credentials", true, null);
        CredentialsChain chain = new CredentialsChain(List.of(env, container));
        CredentialsSource.Unavailable e = assertThrows(CredentialsSource.Unavailable.class, chain::fetch);
        assertEquals("no credentials found; tried environment; container credentials: its endpoint refused the connection", e.getMessage());
        assertTrue(e.configured());
        CredentialsSource.Unavailable none = assertThrows(CredentialsSource.Unavailable.class,
                new CredentialsChain(List.of(env))::fetch);
        assertFalse(none.configured());
    }
}
