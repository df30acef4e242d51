package io.os2g.fuse;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The layouts against the sizes and offsets of include/uapi/linux/fuse.h (what the kernel's BUILD_BUG_ONs and its readers assume). */
@Tag("unit")
class FuseAbiTest {

    @Test
    void structSizesAreTheKernels() {
        assertEquals(40, FuseAbi.InHeader.SIZE, "fuse_in_header");
        assertEquals(16, FuseAbi.OutHeader.SIZE, "fuse_out_header");
        assertEquals(88, FuseAbi.Attr.SIZE, "fuse_attr");
        assertEquals(128, FuseAbi.EntryOut.SIZE, "fuse_entry_out");
        assertEquals(104, FuseAbi.AttrOut.SIZE, "fuse_attr_out");
        assertEquals(16, FuseAbi.OpenOut.SIZE, "fuse_open_out");
        assertEquals(88, FuseAbi.SetattrIn.LAYOUT.byteSize(), "fuse_setattr_in");
        assertEquals(40, FuseAbi.ReadIn.LAYOUT.byteSize(), "fuse_read_in");
        assertEquals(40, FuseAbi.WriteIn.SIZE, "fuse_write_in");
        assertEquals(8, FuseAbi.WriteOut.SIZE, "fuse_write_out");
        assertEquals(16, FuseAbi.CreateIn.SIZE, "fuse_create_in");
        assertEquals(8, FuseAbi.MkdirIn.SIZE, "fuse_mkdir_in");
        assertEquals(8, FuseAbi.RenameIn.SIZE, "fuse_rename_in");
        assertEquals(16, FuseAbi.RenameIn.SIZE2, "fuse_rename2_in");
        assertEquals(24, FuseAbi.HandleIn.RELEASE.byteSize(), "fuse_release_in");
        assertEquals(24, FuseAbi.HandleIn.FLUSH.byteSize(), "fuse_flush_in");
        assertEquals(16, FuseAbi.HandleIn.FSYNC.byteSize(), "fuse_fsync_in");
        assertEquals(8, FuseAbi.ForgetIn.BATCH_SIZE, "fuse_batch_forget_in");
        assertEquals(16, FuseAbi.ForgetIn.ONE_SIZE, "fuse_forget_one");
        assertEquals(80, FuseAbi.StatfsOut.SIZE, "fuse_kstatfs");
        assertEquals(24, FuseAbi.Dirent.NAME, "fuse_dirent before its name");
        assertEquals(64, FuseAbi.InitIn.LAYOUT.byteSize(), "fuse_init_in");
        assertEquals(64, FuseAbi.InitOut.SIZE, "fuse_init_out");
        assertEquals(24, FuseAbi.InitOut.COMPAT_22_SIZE, "FUSE_COMPAT_22_INIT_OUT_SIZE");
    }

    @Test
    void fieldsSitWhereTheKernelReadsThem() {
        assertEquals(32, FuseAbi.InHeader.PID);
        assertEquals(60, FuseAbi.Attr.MODE);
        assertEquals(80, FuseAbi.Attr.BLKSIZE);
        assertEquals(32, FuseAbi.EntryOut.ENTRY_VALID_NSEC);
        assertEquals(36, FuseAbi.EntryOut.ATTR_VALID_NSEC);
        assertEquals(40, FuseAbi.EntryOut.ATTR);
        assertEquals(16, FuseAbi.AttrOut.ATTR);
        assertEquals(12, FuseAbi.OpenOut.BACKING_ID);
        assertEquals(68, FuseAbi.SetattrIn.MODE);
        assertEquals(16, FuseAbi.ReadIn.SIZE_BYTES);
        assertEquals(16, FuseAbi.InitIn.FLAGS2);
        assertEquals(28, FuseAbi.InitOut.MAX_PAGES);
        assertEquals(32, FuseAbi.InitOut.FLAGS2);
        assertEquals(36, FuseAbi.InitOut.MAX_STACK_DEPTH);
    }
}
