"""A deliberately broken S3 server for the adversary tests: it answers unsigned ListObjectsV2 and ranged
GETs of one bucket from a script, misbehaving as `mode` says.

  endless   every listing page is truncated, with a fresh continuation token and `page_keys` new keys
  foreign   listings also name keys outside the asked prefix, and keys shorter than it
  utf8      listings also name keys whose bytes are not UTF-8 (URL-encoded, as asked)
  ignore-if-match
            GETs ignore If-Match: the first chunk comes from version A, the rest from version B, each
            answer with its own ETag
"""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlparse

from xml.sax.saxutils import escape

BUCKET = "hostile"


class HostileS3:
    def __init__(self, mode, objects=None, page_keys=1000, chunk=65536):
        self.mode = mode
        self.objects = objects or {}  # key -> bytes (version A)
        self.versions_b = {k: bytes((b + 1) % 256 for b in v) for k, v in self.objects.items()}
        self.page_keys = page_keys
        self.chunk = chunk
        self.pages = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                url = urlparse(self.path)
                parts = [p for p in url.path.split("/") if p]
                query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
                if len(parts) <= 1:
                    server.listing(self, query)
                else:
                    server.get(self, "/".join(parts[1:]))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def send(handler, status, body, headers=()):
        handler.send_response(status)
        for k, v in headers:
            handler.send_header(k, v)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def listing(self, handler, query):
        prefix = query.get("prefix", "")
        max_keys = int(query.get("max-keys", "1000"))
        contents = []  # (url-encoded key, size, etag)
        truncated = False
        token = None
        if self.mode == "endless":
            self.pages += 1
            n = int(query.get("continuation-token", "0"))
            contents = [(quote(f"{prefix}k{n + i:09d}"), 1, "e") for i in range(min(max_keys, self.page_keys))]
            truncated, token = True, str(n + len(contents) + 1)
        else:
            for key, data in sorted(self.objects.items()):
                if key.startswith(prefix) and "/" not in key[len(prefix):]:
                    contents.append((quote(key), len(data), "A"))
            if self.mode == "foreign":
                contents += [(quote("elsewhere/secret"), 6, "A"), (quote("d"), 1, "A")]
            if self.mode == "utf8":
                contents += [(prefix + "bad%FFname", 1, "A"), (prefix + "bad%FEname", 1, "A")]
        body = ['<?xml version="1.0" encoding="UTF-8"?>',
                '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
                f"<Name>{BUCKET}</Name><Prefix>{escape(prefix)}</Prefix><EncodingType>url</EncodingType>",
                f"<KeyCount>{len(contents)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>",
                f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"]
        if token:
            body.append(f"<NextContinuationToken>{token}</NextContinuationToken>")
        for key, size, etag in contents:
            body.append(f"<Contents><Key>{key}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                        f"<ETag>&quot;{etag}&quot;</ETag><Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents>")
        body.append("</ListBucketResult>")
        self.send(handler, 200, "".join(body).encode(), [("Content-Type", "application/xml")])

    def get(self, handler, key):
        from urllib.parse import unquote
        key = unquote(key)
        if key not in self.objects:
            self.send(handler, 404, b"<Error><Code>NoSuchKey</Code></Error>", [("Content-Type", "application/xml")])
            return
        first, last = 0, len(self.objects[key]) - 1
        rng = handler.headers.get("Range")
        if rng:
            a, b = rng.split("=", 1)[1].split("-")
            first, last = int(a), min(int(b), last)
        # version A for the first chunk; a server ignoring If-Match serves B's bytes after it
        version_b = self.mode == "ignore-if-match" and first >= self.chunk
        data = (self.versions_b if version_b else self.objects)[key]
        self.send(handler, 206, data[first:last + 1],
                  [("Content-Range", f"bytes {first}-{last}/{len(data)}"), ("ETag", '"B"' if version_b else '"A"')])
