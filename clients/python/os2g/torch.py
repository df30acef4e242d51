"""Files of an os2g mount into tensors straight from the staging region, to the GPU by DMA.

os2g stages each file it serves in shared-memory segment files. A file of a mount can be leased: os2g
stages it whole, pins it, and says where its bytes lie (``user.os2g.extents``, or ``MOUNT/.os2g/extents``
for files with too many extents for an xattr). ``load_to_gpu`` maps those segments and registers the
mappings with CUDA (once per process; page-locked, so a copy is a DMA, not a bounce through a pinned
buffer; os2g reuses staging pages where they are, so a registration stays valid), and copies each
extent into one GPU tensor with non-blocking copies on one stream; the lease ends when the copies have
finished. On a machine without CUDA, or for a file that is not on an os2g
mount, it falls back to ``read()``: the bytes are the same either way.

    from os2g.torch import load_to_gpu, collate_to_gpu
    t = load_to_gpu("/mnt/data/shards/train-000.tar", "cuda")     # torch.uint8, on the GPU
    batch = collate_to_gpu(paths, "cuda")                         # a list, copied on one stream

The segments are the mounting user's (mode 0600): the consumer must run as that user (or root).
"""

import errno
import json
import mmap
import os
import threading
import warnings

import torch

from . import mount_root

__all__ = ["Lease", "load_to_gpu", "collate_to_gpu"]

EXTENTS_XATTR = "user.os2g.extents"
_CUDA_HOST_REGISTER_READ_ONLY = 0x08

_lock = threading.Lock()
_segments = {}  # segment file -> its read-only mapping as a CPU uint8 tensor
_registered = set()  # segment files whose mapping is registered with CUDA (the first CUDA copy from them did it)


class Lease:
    """A file of an os2g mount staged whole and pinned until ``close()``: ``size``, ``etag``, and
    ``extents``, a list of ``(segment_file, offset, length)`` in file order."""

    def __init__(self, path):
        path = os.fspath(path)
        self._fd = os.open(path, os.O_RDONLY)  # the xattr lease lasts while a descriptor is open
        self._query = None
        try:
            try:
                raw = os.getxattr(self._fd, EXTENTS_XATTR)
            except OSError as e:
                if e.errno != errno.E2BIG:
                    raise
                raw = self._ask_control_file(path)
            info = json.loads(raw)
            if "error" in info:
                raise OSError(getattr(errno, info["error"], errno.EIO), info.get("message", info["error"]), path)
        except BaseException:
            self.close()
            raise
        self.size = info["size"]
        self.etag = info["etag"]
        self.extents = [(e[0], e[1], e[2]) for e in info["extents"]]

    def _ask_control_file(self, path):
        """Too many extents for an xattr: the control file's query, which holds a lease of its own."""
        root = mount_root(path)
        if root is None:
            raise OSError(errno.ENODATA, "not on an os2g mount", path)
        self._query = os.open(os.path.join(root, ".os2g", "extents"), os.O_RDWR)
        os.write(self._query, (os.path.relpath(os.path.abspath(path), root) + "\n").encode())
        chunks, offset = [], 0
        while True:
            chunk = os.pread(self._query, 1 << 20, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks).splitlines()[0]

    def close(self):
        for fd in (self._query, self._fd):
            if fd is not None:
                os.close(fd)
        self._query = self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _segment(path, register):
    """The segment mapped read-only, as a CPU uint8 tensor; registered with CUDA the first time `register` is asked."""
    with _lock:
        tensor = _segments.get(path)
        if tensor is None:
            with open(path, "rb") as f:
                mapping = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "not writable": it is only ever read
                tensor = torch.frombuffer(mapping, dtype=torch.uint8)
            _segments[path] = tensor
        if register and path not in _registered and torch.cuda.is_available():
            # page-locked and mapped for the device: copies from it are DMA; if the driver refuses
            # (an old driver without read-only registration), copies still work, through a bounce
            torch.cuda.cudart().cudaHostRegister(tensor.data_ptr(), tensor.numel(), _CUDA_HOST_REGISTER_READ_ONLY)
            _registered.add(path)
        return tensor


def _read(path, device):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    tensor = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
    return tensor.to(device)


def _copy_staged(lease, device, non_blocking):
    out = torch.empty(lease.size, dtype=torch.uint8, device=device)
    position = 0
    for segment, offset, length in lease.extents:
        source = _segment(segment, device.type == "cuda")[offset:offset + length]
        out[position:position + length].copy_(source, non_blocking=non_blocking)
        position += length
    if position != lease.size:
        raise OSError(errno.EIO, f"extents cover {position} of {lease.size} bytes")
    return out


def _lease_or_none(path):
    try:
        return Lease(path)
    except OSError as e:
        if e.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EFBIG, errno.EACCES, errno.EPERM):
            return None  # not an os2g file, larger than half the staging region, or segments not ours to map
        raise


def load_to_gpu(path, device="cuda", stream=None):
    """The bytes of ``path`` as a ``torch.uint8`` tensor on ``device``.

    From the staging region when ``path`` is on an os2g mount (CUDA: non-blocking copies from the
    registered mapping on ``stream``, default the current one, waited for before returning); else, or
    without CUDA for a CUDA device, through ``read()``.
    """
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        return _read(path, "cpu")
    return collate_to_gpu([path], device, stream)[0]


def collate_to_gpu(paths, device="cuda", stream=None):
    """A batch of files as ``torch.uint8`` tensors on ``device``, copied on one stream (a side stream of
    its own unless ``stream`` is given) that is waited for once. Call it in the main process, on the
    paths a DataLoader yields: CUDA does not work in forked DataLoader workers."""
    device = torch.device(device)
    cuda = device.type == "cuda" and torch.cuda.is_available()
    if device.type == "cuda" and not cuda:
        device = torch.device("cpu")
    leases, out = [], []

    def load_all():
        for p in paths:
            lease = _lease_or_none(p)
            if lease is None:
                out.append(_read(p, device))
            else:
                leases.append(lease)
                out.append(_copy_staged(lease, device, non_blocking=cuda))

    try:
        if cuda:
            stream = stream or torch.cuda.Stream(device)
            with torch.cuda.stream(stream):
                load_all()
            stream.synchronize()  # the copies are done: the leases may end
            torch.cuda.current_stream(device).wait_stream(stream)
        else:
            load_all()
    finally:
        for lease in leases:
            lease.close()
    return out
