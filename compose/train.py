#!/usr/bin/env python3
"""The demo's trainer: a PyTorch DataLoader over an ImageFolder on the os2g mount (PIL decode, resize
224, batch 32, shuffled), as a training job would read it; prints samples/s per epoch. With the os2g
Python client importable, each epoch's order goes to the mount as prefetch hints (Os2gSampler).

    train.py DATA_DIR [--epochs 2] [--workers 2] [--batch 32] [--no-hints]
"""

import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, RandomSampler
from torchvision import datasets, transforms


def wait_for(path, seconds):
    deadline = time.time() + seconds
    while not os.path.isdir(path):
        if time.time() > deadline:
            sys.exit(f"train: {path} did not appear within {seconds:.0f} s (is the os2g mount up?)")
        time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--no-hints", action="store_true")
    ap.add_argument("--wait", type=float, default=300)
    a = ap.parse_args()

    wait_for(a.data, a.wait)
    dataset = datasets.ImageFolder(a.data, transform=transforms.Compose([
        transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()]))
    sampler = RandomSampler(dataset)
    hints = "off"
    if not a.no_hints:
        try:
            import os2g
            sampler = os2g.Os2gSampler(sampler, [p for p, _ in dataset.samples])
            hints = "on"
        except ImportError:
            hints = "off (os2g client not installed)"
    loader = DataLoader(dataset, batch_size=a.batch, sampler=sampler, num_workers=a.workers)
    print(f"train: {len(dataset)} images in {len(dataset.classes)} classes under {a.data}; "
          f"{a.workers} workers, batch {a.batch}, hints {hints}", flush=True)
    for epoch in range(1, a.epochs + 1):
        start, seen, checksum = time.time(), 0, 0.0
        for images, labels in loader:
            seen += len(labels)
            checksum += float(images.mean())  # touch the pixels, as a model would
        elapsed = time.time() - start
        print(f"train: epoch {epoch}: {seen} samples in {elapsed:.1f} s = {seen / elapsed:.0f} samples/s", flush=True)
        if seen != len(dataset):
            sys.exit(f"train: epoch {epoch} saw {seen} samples, expected {len(dataset)}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
