package io.os2g.store;

import java.util.ArrayList;
import java.util.List;

/**
 * Sources asked in order until one has credentials; from then on that one is asked again on every
 * refresh (its failure is the chain's, so credentials never switch silently to another identity).
 */
public final class CredentialsChain implements CredentialsSource {

    private final List<CredentialsSource> sources;
    private volatile CredentialsSource chosen;

    public CredentialsChain(List<CredentialsSource> sources) {
        if (sources.isEmpty()) {
            throw new IllegalArgumentException("a credentials chain needs at least one source");
        }
        this.sources = List.copyOf(sources);
    }

    @Override
    public Credentials fetch() {
        CredentialsSource answered = chosen;
        if (answered != null) {
            return answered.fetch();
        }
        List<String> tried = new ArrayList<>();
        boolean configured = false;
        for (CredentialsSource source : sources) {
            try {
                Credentials credentials = source.fetch();
                chosen = source;
                return credentials;
            } catch (Unavailable e) {
                configured |= e.configured();
                tried.add(e.configured() ? e.getMessage() : source.name());
            }
        }
        throw new Unavailable("no credentials found; tried " + String.join("; ", tried), configured, null);
    }

    /** The source that answered, or the chain's sources while none has. */
    @Override
    public String name() {
        CredentialsSource answered = chosen;
        return answered != null ? answered.name() : String.join(", ", sources.stream().map(CredentialsSource::name).toList());
    }
}
