package io.os2g.store;

/**
 * Where credentials come from: a file, the environment, an instance's metadata service, a container's
 * credentials endpoint, a web identity exchanged with STS, a command. {@link #fetch} asks it afresh
 * each time (no caching here: {@link RefreshingCredentials} decides when to ask).
 */
public interface CredentialsSource {

    /**
     * Credentials now.
     *
     * @throws Unavailable when this source has none (not configured here) or cannot produce them now
     *     (its endpoint or command failed); the message says which, without any secret
     */
    Credentials fetch();

    /** What the source is, for one-line errors and the log ("environment", "instance metadata at URL"). */
    String name();

    /** A source that could not produce credentials; {@link #configured} false when it is simply not set up here. */
    final class Unavailable extends RuntimeException {
        private final boolean configured;

        public Unavailable(String message, boolean configured, Throwable cause) {
            super(message, cause);
            this.configured = configured;
        }

        /** Whether the source is set up here (its variables or settings present) and failed, rather than absent. */
        public boolean configured() {
            return configured;
        }
    }
}
