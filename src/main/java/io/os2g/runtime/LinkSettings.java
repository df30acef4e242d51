package io.os2g.runtime;

import io.os2g.link.LinkAddress;
import io.os2g.link.LinkTls;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The link between a shim and an agent as the user gave it ({@code --agent}/{@code --listen},
 * {@code --link-cert}, {@code --link-key}, {@code --link-ca}, {@code --link-encryption}), and its rules:
 * a TCP link off this machine is always mutual TLS; the TLS files go together and only with TCP.
 */
final class LinkSettings {

    private LinkSettings() {
    }

    /**
     * @param option the option that named the address, for messages
     * @throws UsageError for an address that is neither form
     */
    static LinkAddress address(String option, String text) {
        try {
            LinkAddress address = LinkAddress.parse(text);
            return address instanceof LinkAddress.Unix u ? new LinkAddress.Unix(u.path().toAbsolutePath().normalize()) : address;
        } catch (IllegalArgumentException e) {
            throw new UsageError(option + ": " + e.getMessage());
        }
    }

    /**
     * The TLS of a link, or null for a Unix socket or an unauthenticated TCP link on loopback (tests).
     *
     * @param encryption {@code on}, or {@code off} for a physically private link (a mount asks for it, an agent allows it); null for on
     * @throws UsageError when a TCP address off this machine has no certificates, or the files are incomplete or bad
     */
    static LinkTls tls(String option, LinkAddress address, Path cert, Path key, Path ca, String encryption) {
        boolean any = cert != null || key != null || ca != null;
        boolean encrypt = switch (encryption == null ? "on" : encryption) {
            case "on" -> true;
            case "off" -> false;
            default -> throw new UsageError("--link-encryption must be on or off: " + encryption);
        };
        if (address instanceof LinkAddress.Unix) {
            if (any || !encrypt) {
                throw new UsageError("--link-cert, --link-key, --link-ca and --link-encryption are for a tcp:// link; "
                        + option + " is a Unix socket");
            }
            return null;
        }
        LinkAddress.Tcp tcp = (LinkAddress.Tcp) address;
        if (!any) {
            if (!tcp.loopback()) {
                throw new UsageError(option + " " + tcp + " is reachable from other machines: give --link-cert, --link-key and "
                        + "--link-ca (mutual TLS; see docs/SPLIT-MODE.md), or use a loopback address");
            }
            if (!encrypt) {
                throw new UsageError("--link-encryption off needs --link-cert, --link-key and --link-ca (the peers still authenticate)");
            }
            return null;
        }
        if (cert == null || key == null || ca == null) {
            throw new UsageError("--link-cert, --link-key and --link-ca go together: "
                    + (cert == null ? "--link-cert" : key == null ? "--link-key" : "--link-ca") + " is missing");
        }
        for (Path file : new Path[] {cert, key, ca}) {
            if (!Files.isReadable(file)) {
                throw new UsageError("cannot read " + file);
            }
        }
        try {
            return LinkTls.load(cert, key, ca, encrypt);
        } catch (IllegalArgumentException e) {
            throw new UsageError(e.getMessage());
        }
    }
}
