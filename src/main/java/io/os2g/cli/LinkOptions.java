package io.os2g.cli;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The mutual TLS of a {@code tcp://} link between a mount and an agent, the same on both ends. */
final class LinkOptions {

    @Option(names = "--link-cert", paramLabel = "PEM", description = "With tcp://: this side's certificate (chain) for the link's mutual TLS.")
    Path cert;

    @Option(names = "--link-key", paramLabel = "PEM", description = "With tcp://: the certificate's private key (PKCS#8).")
    Path key;

    @Option(names = "--link-ca", paramLabel = "PEM", description = "With tcp://: the CA that signs the other side's certificate; any other peer is refused.")
    Path ca;

    @Option(names = "--link-encryption", paramLabel = "on|off",
            description = {"off, for a physically private wire (the host-DPU interface): a mount asks for, and an agent allows, a link whose",
                    "peers authenticate with mutual TLS and whose bytes then go unencrypted (both sides must say off). Default: on."})
    String encryption;
}
