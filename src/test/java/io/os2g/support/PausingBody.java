package io.os2g.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.concurrent.CountDownLatch;

/**
 * A body that hands out its first {@code first} bytes, then waits for {@code rest} before the others:
 * a GET whose first bytes have arrived and whose rest is still on the way.
 */
public final class PausingBody extends InputStream {

    private final byte[] body;
    private final int first;
    private final CountDownLatch rest;
    private final CountDownLatch paused;
    private int at;

    public PausingBody(byte[] body, int first, CountDownLatch rest) {
        this(body, first, rest, new CountDownLatch(1));
    }

    /** @param paused counted down once the reader has had the first bytes and asks for more: all it got is handled */
    public PausingBody(byte[] body, int first, CountDownLatch rest, CountDownLatch paused) {
        this.body = body;
        this.first = first;
        this.rest = rest;
        this.paused = paused;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (at == body.length) {
            return -1;
        }
        if (at == first) {
            paused.countDown();
            try {
                rest.await();
            } catch (InterruptedException e) {
                throw new InterruptedIOException("interrupted while the body paused");
            }
        }
        int n = Math.min(len, (at < first ? first : body.length) - at);
        System.arraycopy(body, at, b, off, n);
        at += n;
        return n;
    }
}
