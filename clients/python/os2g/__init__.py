"""Prefetch hints for os2g mounts: tell the mount which files a loader will read, in order.

A mount of os2g has a hidden control directory ``MOUNT/.os2g/``; writing paths, one per line, to
``MOUNT/.os2g/prefetch`` makes its agent stage those files ahead of the readers, in that order.
"""

import os

__all__ = ["Os2gSampler", "prefetch", "mount_root"]
__version__ = "0.1.0"

_CONTROL = ".os2g"


def mount_root(path):
    """The root of the os2g mount holding ``path``, or None when it is not on one."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.ismount(d):
            return d if os.path.exists(os.path.join(d, _CONTROL, "stats")) else None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def prefetch(paths, replace=True):
    """Asks each os2g mount among ``paths`` to stage its files in the order given.

    ``replace`` drops the files hinted before and not read yet (a new epoch's order); False adds
    these after them. Paths on no os2g mount are skipped. Returns how many paths were sent.
    """
    by_root = {}
    roots = {}  # directory -> its mount root (None: not os2g): one walk up per directory
    for p in paths:
        p = os.fspath(p)
        d = os.path.dirname(os.path.abspath(p))
        if d not in roots:
            roots[d] = mount_root(p)
        root = roots[d]
        if root is not None:
            by_root.setdefault(root, []).append(os.path.relpath(os.path.abspath(p), root))
    sent = 0
    for root, rel in by_root.items():
        with open(os.path.join(root, _CONTROL, "prefetch"), "w" if replace else "a") as f:
            f.write("\n".join(rel) + "\n")
        sent += len(rel)
    return sent


class Os2gSampler:
    """Wraps any sampler: each epoch, hints that epoch's file order to the mount, then yields it.

    ``paths[i]`` is the file that index ``i`` reads (for ImageFolder: ``[p for p, _ in dataset.samples]``).
    Pass it to ``DataLoader(..., sampler=Os2gSampler(sampler, paths))``; it runs in the loader's main
    process, so it works with any ``num_workers``.
    """

    #: Files hinted at a time: the next part is written when the loader is half way through this one,
    #: so the mount holds a bounded list however long the epoch (ImageNet: 1.28 million files).
    WINDOW = 65536

    def __init__(self, sampler, paths):
        self.sampler = sampler
        self.paths = [os.fspath(p) for p in paths]

    def __iter__(self):
        order = list(iter(self.sampler))
        window = self.WINDOW
        prefetch([self.paths[i] for i in order[:window]], replace=True)
        for n, i in enumerate(order):
            if n % window == window // 2 and n + window // 2 < len(order):
                start = n + window // 2
                prefetch([self.paths[j] for j in order[start:start + window]], replace=False)
            yield i

    def __len__(self):
        return len(self.sampler)
