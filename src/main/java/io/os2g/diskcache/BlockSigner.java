package io.os2g.diskcache;

import io.os2g.PerThread;
import io.os2g.PrivateDirectory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.Provider;
import java.security.SecureRandom;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The cache's secret and the MAC made with it (HMAC-SHA256, OpenSSL's where it loads): a block is served only if its MAC, over
 * its key and bytes, was made with this secret. The secret is a file of the cache root, mode 0600,
 * readable only by the user whose mounts share the cache; anyone else who can plant a block file
 * cannot make one that verifies. The shared tier's blocks are signed the same way, with a secret the
 * cluster's nodes share ({@link #of}).
 */
public final class BlockSigner {

    static final String FILE = "secret";
    static final String ALGORITHM = "HmacSHA256";
    public static final int LENGTH = 32;

    private final SecretKeySpec secret;
    private final PerThread<Mac> macs;

    private BlockSigner(byte[] secret) {
        this.secret = new SecretKeySpec(secret, ALGORITHM);
        this.macs = PerThread.withInitial(this::newMac);
    }

    /** The secret of the cache in {@code root}, made there by the first process (a new file linked into place, so every process reads the same). */
    static BlockSigner open(Path root) throws IOException {
        Path file = root.resolve(FILE);
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            byte[] fresh = new byte[LENGTH];
            new SecureRandom().nextBytes(fresh);
            Path temporary = Files.createTempFile(root.resolve("tmp"), "secret", ".tmp",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            try {
                Files.write(temporary, fresh);
                Files.createLink(file, temporary);
            } catch (FileAlreadyExistsException e) {
                // another process made it first: read theirs
            } finally {
                Files.deleteIfExists(temporary);
            }
        }
        Map<String, Object> seen = Files.readAttributes(file, "unix:uid,mode,isRegularFile", LinkOption.NOFOLLOW_LINKS);
        if (!(Boolean) seen.get("isRegularFile") || (Integer) seen.get("uid") != PrivateDirectory.effectiveUid()
                || ((Integer) seen.get("mode") & 077) != 0) {
            throw new IOException(file + " is not a file of this user's with mode 0600: refusing the cache");
        }
        ByteBuffer secret = ByteBuffer.allocate(LENGTH + 1);
        try (SeekableByteChannel in = Files.newByteChannel(file, Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS))) {
            while (secret.hasRemaining() && in.read(secret) >= 0) {
                // until the end, or one byte past the secret's length
            }
        }
        if (secret.position() != LENGTH) {
            throw new IOException(file + " holds " + secret.position() + " bytes, not a secret of " + LENGTH);
        }
        BlockSigner signer = new BlockSigner(secret.array().clone());
        signer.load();
        return signer;
    }

    /** A signer with {@code secret} (at least {@link #LENGTH} bytes), its MAC loaded now. */
    public static BlockSigner of(byte[] secret) {
        if (secret.length < LENGTH) {
            throw new IllegalArgumentException("a secret of " + secret.length + " bytes, not at least " + LENGTH);
        }
        BlockSigner signer = new BlockSigner(secret.clone());
        signer.load();
        return signer;
    }

    /** Loads the MAC's classes and library now, not in the first block's write. */
    private void load() {
        try (PerThread.Lease<Mac> mac = mac()) {
            mac.value().doFinal();
        }
    }

    /** A MAC, reset, keyed with the cache's secret, for the caller's use until the lease closes. */
    public PerThread.Lease<Mac> mac() {
        PerThread.Lease<Mac> mac = macs.take();
        mac.value().reset();
        return mac;
    }

    private Mac newMac() {
        try {
            Optional<Provider> openSsl = OpenSslHmac.provider();
            Mac mac = openSsl.isPresent() ? Mac.getInstance(ALGORITHM, openSsl.get()) : Mac.getInstance(ALGORITHM);
            mac.init(secret);
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(ALGORITHM + " is part of every JDK", e);
        }
    }
}
