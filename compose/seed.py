#!/usr/bin/env python3
"""The demo's one-shot seeding: creates the bucket and uploads a sample ImageFolder dataset of real
JPEGs (CLASSES folders of PER_CLASS images, ~40-120 KB each), skipping what is already there.

    seed.py ENDPOINT BUCKET [--prefix imagefolder/train] [--classes 10] [--per-class 200]

Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Waits up to --wait seconds for the server
(MinIO starts alongside it in docker compose).
"""

import argparse
import io
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError
from PIL import Image


def jpeg(seed):
    """A 256x256 JPEG that compresses like a photo: smooth gradients plus noise."""
    rnd = random.Random(seed)
    size = 256
    base = Image.linear_gradient("L").resize((size, size)).rotate(rnd.randrange(360))
    noise = Image.effect_noise((size, size), rnd.uniform(20, 60))
    channels = [Image.blend(base, noise, rnd.uniform(0.3, 0.7)) for _ in range(3)]
    out = io.BytesIO()
    Image.merge("RGB", channels).save(out, "JPEG", quality=rnd.randrange(85, 96))
    return out.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("endpoint")
    ap.add_argument("bucket")
    ap.add_argument("--prefix", default="imagefolder/train")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--per-class", type=int, default=200)
    ap.add_argument("--wait", type=float, default=120)
    a = ap.parse_args()

    s3 = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1",
                      config=Config(max_pool_connections=16, retries={"max_attempts": 5}))
    deadline = time.time() + a.wait
    while True:
        try:
            s3.list_buckets()
            break
        except (EndpointConnectionError, ClientError) as e:
            if time.time() > deadline:
                sys.exit(f"seed: {a.endpoint} did not answer within {a.wait:.0f} s: {e}")
            time.sleep(1)
    try:
        s3.create_bucket(Bucket=a.bucket)
        print(f"seed: created bucket {a.bucket}")
    except ClientError as e:
        if e.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            raise

    existing = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=a.bucket, Prefix=a.prefix + "/"):
        existing.update(o["Key"] for o in page.get("Contents", []))
    keys = [(f"{a.prefix}/class_{c:02d}/{i:05d}.jpg", c * 100_000 + i)
            for c in range(a.classes) for i in range(a.per_class)]
    todo = [(k, seed) for k, seed in keys if k not in existing]

    def put(item):
        key, seed = item
        body = jpeg(seed)
        s3.put_object(Bucket=a.bucket, Key=key, Body=body, ContentType="image/jpeg")
        return len(body)

    with ThreadPoolExecutor(8) as pool:
        sent = sum(pool.map(put, todo))
    print(f"seed: s3://{a.bucket}/{a.prefix}/: {len(keys)} images in {a.classes} classes "
          f"({len(todo)} uploaded now, {sent / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
