package io.os2g.support;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A CA and certificates signed by it for a network link's mutual TLS, made with openssl in a directory. */
public record LinkCerts(Path ca, Path cert, Path key) {

    /** Makes {@code name}'s key and certificate signed by the CA {@code ca} (made first when missing) in {@code dir}. */
    public static LinkCerts issue(Path dir, String caName, String name) throws IOException, InterruptedException {
        Path ca = dir.resolve(caName + ".pem");
        Path caKey = dir.resolve(caName + ".key");
        if (!ca.toFile().exists()) {
            openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", caKey.toString(),
                    "-out", ca.toString(), "-days", "2", "-subj", "/CN=" + caName);
        }
        Path key = dir.resolve(name + ".key");
        Path csr = dir.resolve(name + ".csr");
        Path cert = dir.resolve(name + ".pem");
        openssl(dir, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key.toString(),
                "-out", csr.toString(), "-subj", "/CN=" + name);
        openssl(dir, "x509", "-req", "-in", csr.toString(), "-CA", ca.toString(), "-CAkey", caKey.toString(), "-CAcreateserial",
                "-out", cert.toString(), "-days", "2");
        return new LinkCerts(ca, cert, key);
    }

    private static void openssl(Path dir, String... args) throws IOException, InterruptedException {
        List<String> command = new java.util.ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(dir.resolve("openssl.log").toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("openssl " + String.join(" ", args) + " failed; see " + dir.resolve("openssl.log"));
        }
    }
}
