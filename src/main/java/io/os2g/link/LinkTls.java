package io.os2g.link;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * Mutual TLS for a network link, from PEM files: this side's certificate chain and PKCS#8 key, and the
 * CA that signs every peer's certificate. Both ends present a certificate and accept only peers the CA
 * signed (TLS 1.3, the JDK's implementation); the CA is the link's trust domain, so names in the
 * certificates are not checked.
 *
 * @param encrypt false for a physically private link (the host-DPU interface): a shim asks for, and an
 *     agent allows, a link whose peers are authenticated by this handshake and whose bytes then go
 *     unencrypted on a second connection (both sides must say so)
 */
public record LinkTls(SSLContext context, boolean encrypt) {

    /**
     * Loads the three files.
     *
     * @throws IllegalArgumentException naming the file and what is wrong with it
     */
    public static LinkTls load(Path cert, Path key, Path ca, boolean encrypt) {
        try {
            List<X509Certificate> chain = certificates(cert);
            PrivateKey privateKey = privateKey(key);
            List<X509Certificate> cas = certificates(ca);
            char[] none = new char[0];
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(null, null);
            keys.setKeyEntry("link", privateKey, none, chain.toArray(new Certificate[0]));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, none);
            KeyStore trusted = KeyStore.getInstance("PKCS12");
            trusted.load(null, null);
            for (int i = 0; i < cas.size(); i++) {
                trusted.setCertificateEntry("ca-" + i, cas.get(i));
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trusted);
            SSLContext context = SSLContext.getInstance("TLSv1.3");
            context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return new LinkTls(context, encrypt);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalArgumentException("the link's certificate, key and CA do not make a TLS context: " + e.getMessage(), e);
        }
    }

    private static List<X509Certificate> certificates(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            List<X509Certificate> certs = CertificateFactory.getInstance("X.509").generateCertificates(in).stream()
                    .map(c -> (X509Certificate) c).toList();
            if (certs.isEmpty()) {
                throw new IllegalArgumentException("no PEM certificate in " + file);
            }
            return certs;
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + file + ": " + e.getMessage(), e);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not a PEM certificate file: " + file + " (" + e.getMessage() + ")", e);
        }
    }

    private static PrivateKey privateKey(Path file) {
        String pem;
        try {
            pem = Files.readString(file, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + file + ": " + e.getMessage(), e);
        }
        String begin = "-----BEGIN PRIVATE KEY-----";
        int from = pem.indexOf(begin);
        int to = pem.indexOf("-----END PRIVATE KEY-----");
        if (from < 0 || to < from) {
            throw new IllegalArgumentException(file + " holds no PKCS#8 key (BEGIN PRIVATE KEY); convert it with "
                    + "openssl pkcs8 -topk8 -nocrypt -in " + file);
        }
        byte[] der = Base64.getMimeDecoder().decode(pem.substring(from + begin.length(), to));
        for (String algorithm : List.of("EC", "RSA", "Ed25519", "RSASSA-PSS")) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // try the next algorithm
            }
        }
        throw new IllegalArgumentException(file + " holds a key of none of EC, RSA or Ed25519");
    }

    /** Turns a socket layered for this link into one end of mutual TLS 1.3. */
    SSLSocket configure(SSLSocket socket, boolean server) {
        SSLParameters parameters = context.getDefaultSSLParameters();
        parameters.setProtocols(new String[] {"TLSv1.3"});
        if (server) {
            parameters.setNeedClientAuth(true);
        }
        socket.setSSLParameters(parameters);
        socket.setUseClientMode(!server);
        return socket;
    }
}
