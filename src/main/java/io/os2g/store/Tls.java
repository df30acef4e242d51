package io.os2g.store;

import java.nio.file.Path;

/**
 * How an https endpoint's certificate is checked.
 *
 * @param caBundle PEM file of the CAs to trust instead of the JDK's (a private CA); null for the JDK's
 * @param skipVerify trust any certificate and any host name: for test setups only, since anyone on
 *     the path can then read and alter the data and see the signed requests
 */
public record Tls(Path caBundle, boolean skipVerify) {

    /** The JDK's trusted CAs, host names checked. */
    public static final Tls SYSTEM = new Tls(null, false);
}
