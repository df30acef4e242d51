package io.os2g.diskcache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Random;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

@Tag("unit")
class OpenSslHmacTest {

    private static final SecretKeySpec KEY = new SecretKeySpec(HexFormat.of().parseHex("0b".repeat(20)), BlockSigner.ALGORITHM);

    /** This machine has libcrypto: the test that it is used must not pass by falling back. */
    @Test
    void libcryptoIsFoundWhereItIsInstalled() {
        assertEquals(Files.exists(Path.of("/usr/lib/x86_64-linux-gnu", OpenSslHmac.LIBRARY)), OpenSslHmac.provider().isPresent());
    }

    @Test
    void rfc4231FirstCase() throws Exception {
        Mac mac = openSsl();
        mac.update("Hi There".getBytes(StandardCharsets.US_ASCII));
        assertEquals("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", HexFormat.of().formatHex(mac.doFinal()));
        // doFinal starts over with the same key
        mac.update("Hi There".getBytes(StandardCharsets.US_ASCII));
        assertEquals("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", HexFormat.of().formatHex(mac.doFinal()));
    }

    /** Every way bytes reach the MAC (heap and native, single bytes, past the heap piece) gives the JDK's answer. */
    @Test
    void agreesWithTheJdkWhateverTheBytesComeIn() throws Exception {
        byte[] data = new byte[3 * 1024 * 1024 + 17];
        new Random(44).nextBytes(data);
        Mac jdk = Mac.getInstance(BlockSigner.ALGORITHM);
        jdk.init(KEY);
        byte[] expected = jdk.doFinal(data);

        Mac mac = openSsl();
        assertArrayEquals(expected, mac.doFinal(data), "one heap array");

        ByteBuffer direct = ByteBuffer.allocateDirect(data.length).put(data).flip();
        mac.update(direct.slice(0, 5));
        mac.update(data[5]);
        mac.update(ByteBuffer.wrap(data, 6, 100_000).slice());
        mac.update(direct.slice(100_006, data.length - 100_006));
        assertArrayEquals(expected, mac.doFinal(), "direct, a byte, heap, direct");

        ByteBuffer whole = direct.duplicate();
        mac.update(whole);
        assertEquals(whole.limit(), whole.position(), "the buffer is consumed");
        mac.update(new byte[10]);
        mac.reset();
        mac.update(direct.duplicate());
        assertArrayEquals(expected, mac.doFinal(), "after a reset");
    }

    @Test
    void theCacheMacsWithLibcryptoWhereItLoads(@TempDir Path root) throws Exception {
        Files.createDirectory(root.resolve("tmp"));
        try (var mac = BlockSigner.open(root).mac()) {
            assertEquals(OpenSslHmac.provider().map(p -> p.getName()).orElse(Mac.getInstance(BlockSigner.ALGORITHM).getProvider().getName()),
                    mac.value().getProvider().getName());
        }
    }

    private static Mac openSsl() throws Exception {
        Mac mac = Mac.getInstance(BlockSigner.ALGORITHM, OpenSslHmac.provider().orElseThrow());
        mac.init(KEY);
        return mac;
    }
}
