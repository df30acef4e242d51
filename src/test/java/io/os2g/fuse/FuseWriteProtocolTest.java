package io.os2g.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The requests of a mount that writes, against a scripted kernel: each is decoded into the call the
 * file system gets (names, flags, modes less umask, the caller's pid) and answered with the structs the
 * kernel reads; a read-only file system answers FLUSH ENOSYS once, and a file opened read-only is closed
 * without one; malformed requests are EIO.
 */
@Tag("unit")
class FuseWriteProtocolTest {

    private static final Duration WAIT = Duration.ofSeconds(5);
    private static final long ROOT = 1, NEW = 7, DIR = 8;

    private FakeKernel kernel;
    private FuseSession session;
    private final RecordingFs fs = new RecordingFs();

    /** Records every change it is asked for; "busy" answers EBUSY. */
    private static final class RecordingFs implements FuseFileSystem {
        final List<String> calls = new CopyOnWriteArrayList<>();
        volatile boolean writable = true;

        @Override
        public boolean writable() {
            return writable;
        }

        @Override
        public Attributes lookup(long parent, String name) {
            throw new FuseException(FuseErrno.ENOENT, name);
        }

        @Override
        public Attributes getattr(long node, long handle) {
            return new Attributes(node, 5, 0100644, 1, 0, 0, 0);
        }

        @Override
        public Opened open(long node, int flags) {
            return Opened.handle(node);
        }

        @Override
        public void read(long node, long handle, long offset, int size, ReadReply reply) {
            throw new FuseException(FuseErrno.EIO, "no reads here");
        }

        @Override
        public void release(long node, long handle) {
            calls.add("release " + handle);
        }

        @Override
        public List<Entry> list(long directory) {
            return List.of();
        }

        @Override
        public Created create(long parent, String name, int flags, int mode, int pid) {
            if (name.equals("busy")) {
                throw new FuseException(16, "busy");
            }
            calls.add("create " + parent + " " + name + " " + Integer.toOctalString(flags) + " " + Integer.toOctalString(mode) + " " + pid);
            return new Created(new Attributes(NEW, 0, 0100644, 1, 0, 0, 0), Opened.direct(42));
        }

        @Override
        public int write(long node, long handle, long offset, MemorySegment data) {
            calls.add("write " + node + " " + handle + " " + offset + " " + new String(data.toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8));
            return (int) data.byteSize();
        }

        @Override
        public void flush(long node, long handle, int pid) {
            calls.add("flush " + handle + " " + pid);
        }

        @Override
        public void fsync(long node, long handle) {
            calls.add("fsync " + handle);
        }

        @Override
        public Attributes mkdir(long parent, String name, int mode) {
            calls.add("mkdir " + parent + " " + name + " " + Integer.toOctalString(mode));
            return new Attributes(DIR, 0, 040755, 1, 0, 0, 0);
        }

        @Override
        public void unlink(long parent, String name) {
            calls.add("unlink " + parent + " " + name);
        }

        @Override
        public void rmdir(long parent, String name) {
            calls.add("rmdir " + parent + " " + name);
        }

        @Override
        public void rename(long parent, String name, long newParent, String newName, int flags) {
            calls.add("rename " + parent + " " + name + " " + newParent + " " + newName + " " + flags);
        }

        @Override
        public Attributes setattr(long node, Changes changes) {
            calls.add("setattr " + node + " valid=" + changes.valid() + " fh=" + changes.handle() + " size=" + changes.size());
            return getattr(node, -1);
        }
    }

    private void start() {
        kernel = new FakeKernel();
        session = new FuseSession(kernel.device(), fs, 2, FuseSession.Timeouts.forever(), 4096, 1 << 20);
        session.start();
        kernel.send(FuseSession.INIT, 1, 0, FakeKernel.init(7, 41, 128 * 1024, Negotiation.BIG_WRITES | Negotiation.ATOMIC_O_TRUNC, 0));
        assertEquals(0, kernel.receive(WAIT).error());
    }

    @AfterEach
    void stop() throws Exception {
        kernel.close();
        assertTrue(session.join(WAIT));
        session.close();
    }

    private static ByteBuffer le(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Test
    void createIsAnsweredWithAnEntryAndAnOpenAndModesLoseTheUmask() {
        start();
        byte[] in = le(16).putInt(01101 /* O_WRONLY|O_CREAT|O_TRUNC */).putInt(0100666).putInt(022).putInt(0).array();
        kernel.send(FuseSession.CREATE, 2, ROOT, 4321, FakeKernel.withNames(in, "ckpt.pt"));
        FakeKernel.Reply reply = kernel.receive(WAIT);
        assertEquals(0, reply.error());
        assertEquals(128 + 16, reply.body().length, "fuse_entry_out and fuse_open_out");
        ByteBuffer b = reply.buffer();
        assertEquals(NEW, b.getLong(0), "the entry's node");
        assertEquals(NEW, b.getLong(40), "its attributes' node");
        assertEquals(42, b.getLong(128), "the open's handle");
        assertEquals(FuseSession.FOPEN_DIRECT_IO, b.getInt(136));
        assertEquals("create 1 ckpt.pt 1101 100644 4321", fs.calls.get(0));

        kernel.send(FuseSession.CREATE, 3, ROOT, FakeKernel.withNames(in, "busy"));
        assertEquals(-16, kernel.receive(WAIT).error(), "the file system's errno");
    }

    @Test
    void aFileOpenedReadOnlyIsClosedWithoutAFlush() {
        start();
        kernel.send(FuseSession.OPEN, 2, NEW, le(8).putInt(0 /* O_RDONLY */).array());
        FakeKernel.Reply read = kernel.receive(WAIT);
        assertEquals(0, read.error());
        assertEquals(FuseSession.FOPEN_NOFLUSH, read.buffer().getInt(8) & FuseSession.FOPEN_NOFLUSH, "fuse_open_out: FOPEN_NOFLUSH");
        kernel.send(FuseSession.OPEN, 3, NEW, le(8).putInt(01 /* O_WRONLY */).array());
        FakeKernel.Reply written = kernel.receive(WAIT);
        assertEquals(0, written.error());
        assertEquals(0, written.buffer().getInt(8) & FuseSession.FOPEN_NOFLUSH, "a writer's close flushes what it wrote");
    }

    @Test
    void writeFlushFsyncAndSetattrReachTheFileSystemWithTheirFields() {
        start();
        byte[] write = le(40).putLong(42).putLong(1000).putInt(5).array();
        kernel.send(FuseSession.WRITE, 2, NEW, java.util.Arrays.copyOf(concat(write, "hello".getBytes(StandardCharsets.UTF_8)), 45));
        FakeKernel.Reply written = kernel.receive(WAIT);
        assertEquals(0, written.error());
        assertEquals(5, written.buffer().getInt(0), "fuse_write_out: the bytes taken");

        kernel.send(FuseSession.FLUSH, 3, NEW, 777, le(24).putLong(42).array());
        assertEquals(0, kernel.receive(WAIT).error());
        kernel.send(FuseSession.FSYNC, 4, NEW, le(16).putLong(42).array());
        assertEquals(0, kernel.receive(WAIT).error());
        byte[] setattr = le(88).putInt(FuseFileSystem.Changes.SIZE | FuseFileSystem.Changes.FH).putInt(0).putLong(42).putLong(5).array();
        kernel.send(FuseSession.SETATTR, 5, NEW, setattr);
        FakeKernel.Reply attr = kernel.receive(WAIT);
        assertEquals(0, attr.error());
        assertEquals(NEW, attr.buffer().getLong(16), "fuse_attr_out's node");
        assertEquals(List.of("write 7 42 1000 hello", "flush 42 777", "fsync 42", "setattr 7 valid=72 fh=42 size=5"), fs.calls);
    }

    @Test
    void directoryChangesAndRenamesCarryTheirNames() {
        start();
        kernel.send(FuseSession.MKDIR, 2, ROOT, FakeKernel.withNames(le(8).putInt(040777).putInt(022).array(), "runs"));
        FakeKernel.Reply made = kernel.receive(WAIT);
        assertEquals(0, made.error());
        assertEquals(DIR, made.buffer().getLong(0));
        kernel.send(FuseSession.UNLINK, 3, DIR, FakeKernel.name("a.bin"));
        assertEquals(0, kernel.receive(WAIT).error());
        kernel.send(FuseSession.RMDIR, 4, ROOT, FakeKernel.name("runs"));
        assertEquals(0, kernel.receive(WAIT).error());
        kernel.send(FuseSession.RENAME, 5, ROOT, FakeKernel.withNames(le(8).putLong(DIR).array(), ".metadata.tmp", ".metadata"));
        assertEquals(0, kernel.receive(WAIT).error());
        kernel.send(FuseSession.RENAME2, 6, DIR, FakeKernel.withNames(le(16).putLong(ROOT).putInt(1).array(), "é.bin", "ü.bin"));
        assertEquals(0, kernel.receive(WAIT).error());
        assertEquals(List.of("mkdir 1 runs 40755", "unlink 8 a.bin", "rmdir 1 runs", "rename 1 .metadata.tmp 8 .metadata 0",
                "rename 8 é.bin 1 ü.bin 1"), fs.calls);
    }

    @Test
    void whatNoObjectStoreHasIsRefusedAndAReadOnlyMountGetsNoFlushes() {
        start();
        kernel.send(FuseSession.SYMLINK, 2, ROOT, FakeKernel.withNames(new byte[0], "l", "target"));
        assertEquals(-FuseErrno.EPERM, kernel.receive(WAIT).error());
        kernel.send(FuseSession.LINK, 3, ROOT, FakeKernel.withNames(le(8).putLong(NEW).array(), "hard"));
        assertEquals(-FuseErrno.EPERM, kernel.receive(WAIT).error());
        kernel.send(FuseSession.SETXATTR, 4, NEW, new byte[16]);
        assertEquals(-FuseErrno.EOPNOTSUPP, kernel.receive(WAIT).error());
        kernel.send(FuseSession.FALLOCATE, 5, NEW, new byte[32]);
        assertEquals(-FuseErrno.EOPNOTSUPP, kernel.receive(WAIT).error());
        kernel.send(FuseSession.COPY_FILE_RANGE, 6, NEW, new byte[56]);
        assertEquals(-FuseErrno.ENOSYS, kernel.receive(WAIT).error(), "the kernel copies with reads and writes instead");

        fs.writable = false;
        kernel.send(FuseSession.FLUSH, 7, NEW, le(24).putLong(42).array());
        assertEquals(-FuseErrno.ENOSYS, kernel.receive(WAIT).error(), "the kernel stops sending FLUSH");
        kernel.send(FuseSession.SYMLINK, 8, ROOT, FakeKernel.withNames(new byte[0], "l", "target"));
        assertEquals(-FuseErrno.EROFS, kernel.receive(WAIT).error());
        assertEquals(List.of(), fs.calls);
    }

    @Test
    void malformedChangesAreEioAndServingGoesOn() {
        start();
        kernel.send(FuseSession.RENAME, 2, ROOT, concat(le(8).putLong(DIR).array(), "only-one-name".getBytes(StandardCharsets.UTF_8)));
        assertEquals(-FuseErrno.EIO, kernel.receive(WAIT).error(), "a name without its NUL");
        kernel.send(FuseSession.CREATE, 3, ROOT, new byte[8]);
        assertEquals(-FuseErrno.EIO, kernel.receive(WAIT).error(), "fuse_create_in cut short");
        kernel.send(FuseSession.WRITE, 4, NEW, concat(le(40).putLong(42).putLong(0).putInt(100).array(), new byte[10]));
        assertEquals(-FuseErrno.EIO, kernel.receive(WAIT).error(), "a write shorter than it says");
        kernel.send(FuseSession.MKDIR, 5, ROOT, FakeKernel.withNames(le(8).putInt(040755).array(), "ok"));
        assertEquals(0, kernel.receive(WAIT).error(), "the session still serves");
        assertEquals(List.of("mkdir 1 ok 40755"), fs.calls);
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
