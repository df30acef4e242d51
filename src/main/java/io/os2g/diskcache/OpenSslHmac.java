package io.os2g.diskcache;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.security.InvalidAlgorithmParameterException;
import java.security.InvalidKeyException;
import java.security.Key;
import java.security.Provider;
import java.security.ProviderException;
import java.security.spec.AlgorithmParameterSpec;
import java.util.Optional;
import javax.crypto.MacSpi;

/**
 * HMAC-SHA256 from OpenSSL's libcrypto, as a JCA {@link MacSpi}, for the cache's block MACs. The
 * launcher runs the JVM without C2, and the JDK's SHA-256 is fast only where C2 compiles it to SHA
 * instructions: under C1 a block is authenticated at about a tenth of the speed libcrypto reaches. Where
 * libcrypto cannot be loaded, {@link #provider()} is empty and the JDK's own MAC is used.
 */
final class OpenSslHmac extends MacSpi {

    static final String LIBRARY = "libcrypto.so.3";
    private static final int LENGTH = 32;
    /** Heap bytes go to libcrypto in pieces this size, so no call holds off the collector for long. */
    private static final int HEAP_PIECE = 64 * 1024;

    private static final Cleaner CLEANER = Cleaner.create();
    private static final Functions FUNCTIONS = Functions.load();
    private static final Provider PROVIDER = FUNCTIONS == null ? null : new OpenSslProvider();

    /** The functions of libcrypto's HMAC this class calls. */
    private record Functions(MethodHandle ctxNew, MethodHandle ctxFree, MemorySegment sha256, MethodHandle init,
            MethodHandle update, MethodHandle updateHeap, MethodHandle finish) {

        static Functions load() {
            try {
                SymbolLookup crypto = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
                Linker linker = Linker.nativeLinker();
                MethodHandle evpSha256 = linker.downcallHandle(find(crypto, "EVP_sha256"), FunctionDescriptor.of(ValueLayout.ADDRESS));
                FunctionDescriptor update = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.JAVA_LONG);
                return new Functions(
                        linker.downcallHandle(find(crypto, "HMAC_CTX_new"), FunctionDescriptor.of(ValueLayout.ADDRESS)),
                        linker.downcallHandle(find(crypto, "HMAC_CTX_free"), FunctionDescriptor.ofVoid(ValueLayout.ADDRESS)),
                        (MemorySegment) evpSha256.invokeExact(),
                        linker.downcallHandle(find(crypto, "HMAC_Init_ex"), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS)),
                        linker.downcallHandle(find(crypto, "HMAC_Update"), update),
                        linker.downcallHandle(find(crypto, "HMAC_Update"), update, Linker.Option.critical(true)),
                        linker.downcallHandle(find(crypto, "HMAC_Final"), FunctionDescriptor.of(ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS), Linker.Option.critical(true)));
            } catch (Throwable t) {
                // no libcrypto, an older one, or native access refused: the JDK's MAC serves
                return null;
            }
        }

        private static MemorySegment find(SymbolLookup crypto, String name) {
            return crypto.find(name).orElseThrow(() -> new IllegalArgumentException(name + " not in " + LIBRARY));
        }
    }

    /** The provider of OpenSSL's HMAC-SHA256, or empty where libcrypto is not there to call. */
    static Optional<Provider> provider() {
        return Optional.ofNullable(PROVIDER);
    }

    private static final class OpenSslProvider extends Provider {
        OpenSslProvider() {
            super("os2g-openssl", "1", "HMAC-SHA256 from " + LIBRARY);
            putService(new Service(this, "Mac", BlockSigner.ALGORITHM, OpenSslHmac.class.getName(), null, null) {
                @Override
                public Object newInstance(Object parameter) {
                    return new OpenSslHmac();
                }
            });
        }
    }

    private final MemorySegment context;
    private final MemorySegment digest = MemorySegment.ofArray(new byte[LENGTH]);
    private final MemorySegment digestLength = MemorySegment.ofArray(new int[1]);
    private final byte[] one = new byte[1];
    private boolean keyed;

    private OpenSslHmac() {
        try {
            context = (MemorySegment) FUNCTIONS.ctxNew().invokeExact();
        } catch (Throwable t) {
            throw new ProviderException("HMAC_CTX_new", t);
        }
        if (context.equals(MemorySegment.NULL)) {
            throw new ProviderException("HMAC_CTX_new: out of memory");
        }
        MethodHandle free = FUNCTIONS.ctxFree();
        MemorySegment freed = context;
        CLEANER.register(this, () -> {
            try {
                free.invokeExact(freed);
            } catch (Throwable t) {
                throw new IllegalStateException("HMAC_CTX_free", t);
            }
        });
    }

    @Override
    protected int engineGetMacLength() {
        return LENGTH;
    }

    @Override
    protected void engineInit(Key key, AlgorithmParameterSpec params) throws InvalidKeyException, InvalidAlgorithmParameterException {
        if (params != null) {
            throw new InvalidAlgorithmParameterException("HMAC-SHA256 takes no parameters");
        }
        byte[] secret = key == null ? null : key.getEncoded();
        if (secret == null) {
            throw new InvalidKeyException("a key with no bytes");
        }
        try (Arena call = Arena.ofConfined()) {
            MemorySegment nativeSecret = call.allocate(Math.max(1, secret.length));
            MemorySegment.copy(secret, 0, nativeSecret, ValueLayout.JAVA_BYTE, 0, secret.length);
            check((int) FUNCTIONS.init().invokeExact(context, nativeSecret, secret.length, FUNCTIONS.sha256(), MemorySegment.NULL),
                    "HMAC_Init_ex");
            nativeSecret.fill((byte) 0);
            keyed = true;
        } catch (ProviderException e) {
            throw e;
        } catch (Throwable t) {
            throw new ProviderException("HMAC_Init_ex", t);
        }
    }

    @Override
    protected void engineUpdate(byte input) {
        one[0] = input;
        engineUpdate(one, 0, 1);
    }

    @Override
    protected void engineUpdate(byte[] input, int offset, int len) {
        update(MemorySegment.ofArray(input).asSlice(offset, len));
    }

    @Override
    protected void engineUpdate(ByteBuffer input) {
        int n = input.remaining();
        update(MemorySegment.ofBuffer(input));
        input.position(input.position() + n);
    }

    private void update(MemorySegment bytes) {
        try {
            if (bytes.isNative()) {
                check((int) FUNCTIONS.update().invokeExact(context, bytes, bytes.byteSize()), "HMAC_Update");
                return;
            }
            for (long done = 0; done < bytes.byteSize(); done += HEAP_PIECE) {
                MemorySegment piece = bytes.asSlice(done, Math.min(HEAP_PIECE, bytes.byteSize() - done));
                check((int) FUNCTIONS.updateHeap().invokeExact(context, piece, piece.byteSize()), "HMAC_Update");
            }
        } catch (ProviderException e) {
            throw e;
        } catch (Throwable t) {
            throw new ProviderException("HMAC_Update", t);
        }
    }

    @Override
    protected byte[] engineDoFinal() {
        try {
            check((int) FUNCTIONS.finish().invokeExact(context, digest, digestLength), "HMAC_Final");
        } catch (ProviderException e) {
            throw e;
        } catch (Throwable t) {
            throw new ProviderException("HMAC_Final", t);
        }
        byte[] mac = digest.toArray(ValueLayout.JAVA_BYTE);
        engineReset();
        return mac;
    }

    /** Starts over with the same key (libcrypto keeps it when given none). */
    @Override
    protected void engineReset() {
        if (!keyed) {
            return;
        }
        try {
            check((int) FUNCTIONS.init().invokeExact(context, MemorySegment.NULL, 0, MemorySegment.NULL, MemorySegment.NULL),
                    "HMAC_Init_ex");
        } catch (ProviderException e) {
            throw e;
        } catch (Throwable t) {
            throw new ProviderException("HMAC_Init_ex", t);
        }
    }

    private static void check(int result, String function) {
        if (result != 1) {
            throw new ProviderException(function + " failed");
        }
    }
}
