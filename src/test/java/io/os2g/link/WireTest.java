package io.os2g.link;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.os2g.store.Listing;
import io.os2g.store.ObjectSummary;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.Tag;
import io.os2g.staging.ChunkKey;
import io.os2g.staging.ExtentIndex;
import org.junit.jupiter.api.Test;

@Tag("unit")
class WireTest {

    private static final List<Message> EVERY_KIND = List.of(
            new Message.Hello(Wire.VERSION, new MountSpec("bkt", "train/", 1L << 30, 8 << 20, 64 << 20, 256, -1, true, false, 2, true),
                    false, List.of()),
            new Message.Hello(Wire.VERSION, new MountSpec("bkt", "", 1L << 30, 8 << 20, 64 << 20, 256, -1, true, false, 2, true),
                    true, List.of(new ExtentIndex.Held(17, new ChunkKey(42, 3), -5L, 125_000, new int[] {9, 10}),
                            new ExtentIndex.Held(3, new ChunkKey(7, -1), 1L, 0, new int[] {11}))),
            new Message.Posted(new ExtentIndex.Held(1 << 20, new ChunkKey(1L << 40, 0), 0x1234_5678_9abc_def0L, 8 << 20, new int[] {0, 1, 2})),
            new Message.Recalled(new int[] {1, 5, 1 << 20}),
            new Message.Returned(new int[] {5}),
            new Message.PartBytes(3, 2, 12345),
            new Message.Welcome(new StagingRegionSpec("/dev/shm/os2g/a/mount-1", 1L << 30, 65536, 64L << 20)),
            new Message.Refused("bucket bkt does not exist"),
            new Message.ListPrefix("train/cat/"),
            new Message.Listed(new Listing("train/", List.of(new ObjectSummary("train/ünï €.jpg", 125_000, "e1", 1700000000000L)),
                    List.of("train/cat/", "train/dog/"))),
            new Message.Open(7, new OpenRequest(42, "train/a.jpg", "etag", 125_000)),
            new Message.Read(new ReadRequest(7, 1L << 33, 1 << 20), true),
            new Message.Read(new ReadRequest(7, 0, 4096), false),
            new Message.Done(),
            new Message.Lend(),
            new Message.ReplyToRead(new ReadRequest(7, 1L << 33, 512 << 10), 0x1234_5678_9abcL),
            new Message.ReadReplied(512 << 10, 1, 0),
            new Message.Failed(5, "server error HTTP 503"),
            new Message.Release(7),
            new Message.Stats(),
            new Message.StatsReply("{\"gets\": 1}"),
            new Message.Prefetch(new PrefetchRequest(List.of(new OpenRequest(42, "train/a.jpg", "etag", 125_000),
                    new OpenRequest(-3, "train/ü/b.jpg", "", 0)), true, false)),
            new Message.Prefetch(new PrefetchRequest(List.of(), false, true)),
            new Message.BeginWrite("ckpt/ü step-9.pt"),
            new Message.Began(3),
            new Message.NextPart(3, 10_000),
            new Message.PartPages(new io.os2g.staging.ReservedPages(2, new int[] {7, 8, 9, 4096}, 8 << 20)),
            new Message.PartWritten(3, 2, 8 << 20),
            new Message.FlushWrite(3),
            new Message.FinishWrite(3, 5, 12345),
            new Message.Published(new ObjectSummary("ckpt/a.pt", 5L << 30, "abc-2", 1700000000000L)),
            new Message.AbortWrite(3),
            new Message.DeleteObject("ckpt/old.pt"),
            new Message.MoveObject("dcp/.metadata.tmp", "dcp/.metadata", 1234));

    @Test
    void everyMessageComesBackAsItWasSentInOrder() throws IOException {
        ByteArrayOutputStream sent = new ByteArrayOutputStream();
        Wire writer = new Wire(new ByteArrayInputStream(new byte[0]), sent);
        long id = 1;
        for (Message m : EVERY_KIND) {
            writer.send(id++, m);
        }
        Wire reader = new Wire(new ByteArrayInputStream(sent.toByteArray()), new ByteArrayOutputStream());
        id = 1;
        for (Message m : EVERY_KIND) {
            Wire.Frame frame = reader.receive();
            assertEquals(id++, frame.id());
            assertEquals(m, frame.message());
        }
        assertThrows(EOFException.class, reader::receive, "the peer hung up");
    }

    @Test
    void framesSentSoonArriveTogetherWithinMillisAndBeforeAnyFrameSentAfterThem() throws Exception {
        ByteArrayOutputStream sent = new ByteArrayOutputStream();
        Wire writer = new Wire(new ByteArrayInputStream(new byte[0]), sent);
        writer.sendSoon(1, new Message.ReadReplied(4096, 1, 0));
        writer.sendSoon(2, new Message.Failed(5, "fetch failed"));
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        while (sent.size() == 0) {
            assertTrue(System.nanoTime() < deadline, "frames sent soon were never written");
            Thread.sleep(1);
        }
        writer.sendSoon(3, new Message.ReadReplied(8192, 0, 1));
        writer.send(4, new Message.Done()); // takes the frame held for soon with it, ahead of itself
        Wire reader = new Wire(new ByteArrayInputStream(sent.toByteArray()), new ByteArrayOutputStream());
        for (long id = 1; id <= 4; id++) {
            assertEquals(id, reader.receive().id());
        }
        assertThrows(EOFException.class, reader::receive);
    }

    @Test
    void framesTheReaderSendsSoonGoInOneWriteWhenItWaitsForTheNextFrame() throws Exception {
        java.io.PipedOutputStream toReader = new java.io.PipedOutputStream();
        java.io.PipedInputStream readerIn = new java.io.PipedInputStream(toReader, 1 << 16);
        List<byte[]> writes = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        Wire wire = new Wire(readerIn, recording(writes));
        Wire peer = new Wire(new ByteArrayInputStream(new byte[0]), toReader);
        peer.send(1, new Message.ReplyToRead(new ReadRequest(7, 0, 4096), 11));
        peer.send(2, new Message.ReplyToRead(new ReadRequest(7, 4096, 4096), 12));
        // as the agent tells a failed READ
        Thread reader = answering(wire, frame -> wire.sendSoon(frame.id(), new Message.Failed(5, "evicted")));
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        while (writes.isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "the reader's answers were never written");
            Thread.sleep(1);
        }
        assertEquals(1, writes.size(), "both answers in one write, once both requests were read");
        Wire answers = new Wire(new ByteArrayInputStream(writes.getFirst()), new ByteArrayOutputStream());
        assertEquals(new Wire.Frame(1, new Message.Failed(5, "evicted")), answers.receive());
        assertEquals(2, answers.receive().id());
        toReader.close();
        reader.join(5000);
    }

    @Test
    void anAnswerTheReaderSendsLaterWaitsPastItsWaitForInputAndGoesWithinItsBound() throws Exception {
        java.io.PipedOutputStream toReader = new java.io.PipedOutputStream();
        java.io.PipedInputStream readerIn = new java.io.PipedInputStream(toReader, 1 << 16);
        List<byte[]> writes = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        Wire wire = new Wire(readerIn, recording(writes));
        java.util.concurrent.atomic.AtomicLong answeredAt = new java.util.concurrent.atomic.AtomicLong();
        Thread reader = answering(wire, frame -> { // as the agent answers a staged READ
            answeredAt.set(System.nanoTime());
            wire.sendLater(frame.id(), new Message.ReadReplied(4096, 1, 0));
        });
        new Wire(new ByteArrayInputStream(new byte[0]), toReader).send(1, new Message.ReplyToRead(new ReadRequest(7, 0, 4096), 11));
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        while (answeredAt.get() == 0 || reader.getState() != Thread.State.TIMED_WAITING) { // back in the pipe's read
            assertTrue(System.nanoTime() < deadline, "the reader never took the request");
            Thread.onSpinWait();
        }
        if (System.nanoTime() - answeredAt.get() < java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(Wire.LATER_MILLIS)) {
            assertTrue(writes.isEmpty(), "written when the reader waited for its next request");
        }
        while (writes.isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "an answer with nothing sent after it was never written");
            Thread.sleep(1);
        }
        assertEquals(new Wire.Frame(1, new Message.ReadReplied(4096, 1, 0)),
                new Wire(new ByteArrayInputStream(writes.getFirst()), new ByteArrayOutputStream()).receive());
        toReader.close();
        reader.join(5000);
    }

    @Test
    void aFrameSentLaterGoesInTheWriteOfTheNextFrameOrAloneWithinItsBound() throws Exception {
        List<byte[]> writes = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        Wire writer = new Wire(new ByteArrayInputStream(new byte[0]), recording(writes));
        writer.sendLater(1, new Message.Release(7));
        writer.sendLater(2, new Message.Open(8, new OpenRequest(42, "train/a.jpg", "etag", 125_000)));
        writer.send(3, new Message.ReplyToRead(new ReadRequest(8, 0, 128 << 10), 11));
        assertEquals(1, writes.size(), "the release and the open ride with the READ's request");
        Wire reader = new Wire(new ByteArrayInputStream(writes.getFirst()), new ByteArrayOutputStream());
        for (long id = 1; id <= 3; id++) {
            assertEquals(id, reader.receive().id());
        }
        writer.sendLater(4, new Message.Release(8));
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        while (writes.size() < 2) {
            assertTrue(System.nanoTime() < deadline, "a release with nothing sent after it was never written");
            Thread.sleep(1);
        }
        assertEquals(new Wire.Frame(4, new Message.Release(8)),
                new Wire(new ByteArrayInputStream(writes.get(1)), new ByteArrayOutputStream()).receive());
    }

    private interface FrameAnswer {
        void answer(Wire.Frame frame) throws IOException;
    }

    /** A thread that reads {@code wire} and answers each frame, as the agent's link thread does, until the peer hangs up. */
    private static Thread answering(Wire wire, FrameAnswer answer) {
        return Thread.ofPlatform().daemon().start(() -> {
            try {
                for (;;) {
                    answer.answer(wire.receive());
                }
            } catch (IOException e) {
                // the test hung up
            }
        });
    }

    /** A stream that keeps each write(2) the wire makes, as its own array. */
    private static java.io.OutputStream recording(List<byte[]> writes) {
        return new java.io.OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                writes.add(java.util.Arrays.copyOfRange(b, off, off + len));
            }
        };
    }

    @Test
    void aFrameSentFromAVirtualThreadLeavesTheSocketBlocking(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws Exception {
        var address = java.net.UnixDomainSocketAddress.of(dir.resolve("link.sock"));
        try (var server = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            server.bind(address);
            try (var client = java.nio.channels.SocketChannel.open(address); var accepted = server.accept()) {
                int before = nonBlockingSockets();
                Wire wire = new Wire(SocketChannelStreams.in(client), SocketChannelStreams.out(client));
                Thread.ofVirtual().start(() -> {
                    try {
                        wire.send(1, new Message.Release(7));
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }).join();
                assertEquals(before, nonBlockingSockets(), "the platform thread reading the link would poll at every wake-up");
                Wire peer = new Wire(SocketChannelStreams.in(accepted), SocketChannelStreams.out(accepted));
                assertEquals(new Wire.Frame(1, new Message.Release(7)), peer.receive());
                // what a write on the virtual thread itself does (and that this test sees it)
                Thread.ofVirtual().start(() -> {
                    try {
                        client.write(java.nio.ByteBuffer.wrap(new byte[1]));
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }).join();
                assertEquals(before + 1, nonBlockingSockets());
            }
        }
    }

    /** This process's sockets whose descriptor has O_NONBLOCK, from /proc/self/fdinfo. */
    private static int nonBlockingSockets() throws IOException {
        int count = 0;
        try (var fds = java.nio.file.Files.newDirectoryStream(java.nio.file.Path.of("/proc/self/fd"))) {
            for (java.nio.file.Path fd : fds) {
                try {
                    if (!java.nio.file.Files.readSymbolicLink(fd).toString().startsWith("socket:")) {
                        continue;
                    }
                    for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/fdinfo", fd.getFileName().toString()))) {
                        if (line.startsWith("flags:") && (Integer.parseInt(line.substring(6).trim(), 8) & 04000) != 0) {
                            count++;
                        }
                    }
                } catch (IOException e) {
                    // closed meanwhile (the stream's own descriptor)
                }
            }
        }
        return count;
    }

    @Test
    void aWriteAnswerThatLiesAboutItsSizesIsRefusedNotBelieved() throws IOException {
        // PartPages claiming more pages than the frame holds, and a Published object of negative size
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.io.DataOutputStream frame = new java.io.DataOutputStream(bytes);
        frame.writeInt(9 + 12);
        frame.writeByte(21);
        frame.writeLong(1);
        frame.writeInt(1);
        frame.writeInt(8 << 20);
        frame.writeInt(-5);
        assertThrows(IOException.class, () -> new Wire(new ByteArrayInputStream(bytes.toByteArray()), new ByteArrayOutputStream()).receive());

        ByteArrayOutputStream sent = new ByteArrayOutputStream();
        new Wire(new ByteArrayInputStream(new byte[0]), sent).send(2, new Message.Published(new ObjectSummary("k", 1, "e", 0)));
        byte[] published = sent.toByteArray();
        // the size follows the key's length (4 bytes) and the key: set its top bit
        published[4 + 1 + 8 + 4 + 1] = (byte) 0x80;
        assertThrows(IOException.class, () -> new Wire(new ByteArrayInputStream(published), new ByteArrayOutputStream()).receive());
    }

    @Test
    void aHelloOfAnotherVersionIsReadAsSuchWithoutItsBody() throws IOException {
        ByteArrayOutputStream sent = new ByteArrayOutputStream();
        new Wire(new ByteArrayInputStream(new byte[0]), sent).send(0, new Message.Hello(Wire.VERSION + 1,
                new MountSpec("b", "", 1, 1, 1, 0, 0, false, true, -1, false), false, List.of()));
        Message.Hello hello = (Message.Hello) new Wire(new ByteArrayInputStream(sent.toByteArray()), new ByteArrayOutputStream())
                .receive().message();
        assertEquals(Wire.VERSION + 1, hello.version());
    }

    @Test
    void aStrangerOnTheSocketIsRefusedNotBelieved() {
        byte[] http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes();
        assertThrows(IOException.class, () -> new Wire(new ByteArrayInputStream(http), new ByteArrayOutputStream()).receive());
    }
}
