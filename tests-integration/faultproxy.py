"""A fault-injecting HTTP proxy between a mount and the S3 server, for the reliability tests.

Requests pass through unchanged (the Host header too, so SigV4 signatures stay valid) until a fault
is armed. A fault applies to the next `count` matching requests (None: every one, until cleared), or
to each with a probability. Kinds:

  status   answer with an S3 error (500 InternalError, 503 SlowDown, ...) without asking the server;
           html=True answers as a load balancer in front of the server does: an HTML page
  stall    hold the response for `seconds` (past the mount's request deadline)
  reset    send the headers and `after` body bytes, then reset the connection (RST)
  truncate send the headers with the full Content-Length and `after` body bytes, then close (FIN)

`refuse()` closes the listener and every open connection (connection refused from then on);
`accept()` listens again on the same port.

`bucket_region = "eu-west-3"` makes it stand for a bucket in that region: a request signed for
another answers as S3 does (a HEAD 301, anything else 400 AuthorizationHeaderMalformed, both naming the
region in x-amz-bucket-region). As a forward proxy (HTTP_PROXY), it takes absolute-form requests
(`GET http://host/...`) too and counts them in `forwarded`. `host="::1"` listens on IPv6 loopback.

`refuse_unsigned = True` makes it stand for a store that takes no unsigned payloads: a PUT signed
UNSIGNED-PAYLOAD is answered 501 NotImplemented (counted in `refused_unsigned`).

`gate_tokens(valid, access_key, secret_key)` makes the proxy stand for a store that takes temporary
credentials (the S3 server behind it does not): a request signed with a session token is answered 400
ExpiredToken unless `valid(access_key, token)`, and is otherwise sent on without the token, signed again
with the server's own key.
"""

import html
import http.client
import random
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade"}


class Fault:
    def __init__(self, kind, *, match="data", count=None, probability=1.0, status=503, code="SlowDown",
                 seconds=0.0, after=0, html=False):
        self.kind = kind
        self.match = match
        self.count = count
        self.probability = probability
        self.status = status
        self.code = code
        self.seconds = seconds
        self.after = after
        self.html = html

    def __repr__(self):
        return f"Fault({self.kind}, match={self.match}, count={self.count}, p={self.probability})"


def request_class(method, path):
    """'data' for a GET of an object, 'part' for the PUT of one part of a multipart upload, 'upload'
    for the other writes of an object (a whole PUT, a multipart upload's start and completion), 'list'
    for anything else (requests addressed to the bucket itself, HEAD, DELETE)."""
    segments = [s for s in path.split("?", 1)[0].split("/") if s]
    if len(segments) < 2:
        return "list"
    if method == "GET":
        return "data"
    if method == "PUT" and "partNumber=" in path:
        return "part"
    return "upload" if method in ("PUT", "POST") else "list"


class FaultProxy:
    def __init__(self, upstream, host="127.0.0.1"):
        url = urlparse(upstream)
        self.upstream = (url.hostname, url.port)
        self.host = host
        self.bucket_region = None
        self.misdirected = 0
        self.forwarded = 0
        self.lock = threading.Lock()
        self.faults = []
        self.connections = set()
        self.requests = 0
        self.injected = 0
        self.random = random.Random(1234)
        self.server = None
        self.port = 0
        self.token_gate = None
        # a store that takes no unsigned payloads: a PUT signed UNSIGNED-PAYLOAD is answered 501 NotImplemented
        self.refuse_unsigned = False
        self.refused_unsigned = 0
        self.gated = 0
        self.accept()

    def gate_tokens(self, valid, access_key, secret_key, region="us-east-1"):
        self.token_gate = (valid, access_key, secret_key, region)

    @property
    def endpoint(self):
        return f"http://[{self.host}]:{self.port}" if ":" in self.host else f"http://{self.host}:{self.port}"

    def arm(self, fault):
        with self.lock:
            self.faults.append(fault)
        return fault

    def clear(self):
        with self.lock:
            self.faults.clear()

    def refuse(self):
        server, self.server = self.server, None
        if server:
            server.shutdown()
            server.server_close()
        with self.lock:
            connections = list(self.connections)
        for c in connections:
            # the handler thread then sees end of stream and closes the socket for good
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def accept(self):
        proxy = self

        class Handler(ProxyHandler):
            owner = proxy

        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        server_class = type("Server", (ThreadingHTTPServer,), {"address_family": family})
        server = server_class((self.host, self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def close(self):
        self.refuse()

    def take(self, method, path):
        """The fault for this request, if one is armed and applies; uses up one of its count."""
        kind = request_class(method, path)
        with self.lock:
            self.requests += 1
            for fault in self.faults:
                if fault.match not in ("any", kind):
                    continue
                if fault.count is not None and fault.count <= 0:
                    continue
                if fault.probability < 1.0 and self.random.random() >= fault.probability:
                    continue
                if fault.count is not None:
                    fault.count -= 1
                self.injected += 1
                return fault
        return None


def abort(sock):
    """Close with RST, not FIN: the peer sees 'connection reset' (once the handler's files close too)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: FaultProxy = None

    def setup(self):
        super().setup()
        self.upstream = None
        with self.owner.lock:
            self.owner.connections.add(self.connection)

    def finish(self):
        with self.owner.lock:
            self.owner.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass
        if self.upstream:
            self.upstream.close()

    def log_message(self, *args):
        pass

    def do_GET(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if self.path.startswith("http://"):
            # a forward proxy's request: the server's path alone goes on
            self.path = "/" + self.path.split("/", 3)[3] if self.path.count("/") >= 3 else "/"
            with self.owner.lock:
                self.owner.forwarded += 1
        if self.owner.bucket_region and self.signed_region() != self.owner.bucket_region:
            with self.owner.lock:
                self.owner.misdirected += 1
            return self.answer_wrong_region()
        if self.owner.refuse_unsigned and self.command == "PUT" and self.headers.get("x-amz-content-sha256") == "UNSIGNED-PAYLOAD":
            with self.owner.lock:
                self.owner.refused_unsigned += 1
            return self.answer_error(Fault("status", status=501, code="NotImplemented"))
        fault = self.owner.take(self.command, self.path)
        if fault and fault.kind == "status":
            return self.answer_error(fault)
        headers = self.resigned() if self.owner.token_gate else list(self.headers.items())
        if headers is None:
            with self.owner.lock:
                self.owner.gated += 1
            return self.answer_error(Fault("status", status=400, code="ExpiredToken"))
        if fault and fault.kind == "stall":
            time.sleep(fault.seconds)
        try:
            status, reason, headers, data = self.forward(body, headers)
        except (OSError, http.client.HTTPException):
            # the server is down or hung up: so does the proxy, without an answer
            self.close_connection = True
            abort(self.connection)
            return
        out = [f"HTTP/1.1 {status} {reason}\r\n"]
        for k, v in headers:
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                out.append(f"{k}: {v}\r\n")
        full = int(dict((k.lower(), v) for k, v in headers).get("content-length", len(data))) \
            if self.command == "HEAD" else len(data)
        out.append(f"Content-Length: {full}\r\n\r\n")
        try:
            self.wfile.write("".join(out).encode("latin-1"))
            if fault and fault.kind in ("reset", "truncate") and self.command == "GET":
                self.wfile.write(data[: min(fault.after, max(0, len(data) - 1))])
                self.wfile.flush()
                self.close_connection = True
                if fault.kind == "reset":
                    abort(self.connection)
                else:
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if self.command != "HEAD":
                self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def signed_region(self):
        auth = self.headers.get("Authorization", "")
        scope = auth.split("Credential=", 1)[1].split(",", 1)[0].split("/") if "Credential=" in auth else []
        return scope[2] if len(scope) > 2 else None

    def answer_wrong_region(self):
        region = self.owner.bucket_region
        if self.command == "HEAD":
            status, body = 301, b""
        else:
            status = 400
            body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AuthorizationHeaderMalformed</Code>'
                    f"<Message>The authorization header is malformed; the region '{self.signed_region()}' is wrong; "
                    f"expecting '{region}'</Message><Region>{region}</Region><RequestId>region</RequestId></Error>").encode()
        self.send_answer(status, "application/xml", body, {"x-amz-bucket-region": region})

    def resigned(self):
        """The request's headers signed with the server's key instead of the session token it carries;
        None when its token is not one the gate takes (expired, unknown); unchanged without a token."""
        valid, key, secret, region = self.owner.token_gate
        token = self.headers.get("X-Amz-Security-Token")
        if token is None:
            return list(self.headers.items())
        auth = self.headers.get("Authorization", "")
        used_key = auth.split("Credential=", 1)[1].split("/", 1)[0] if "Credential=" in auth else ""
        if not valid(used_key, token):
            return None
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        drop = {"authorization", "x-amz-security-token", "x-amz-date", "x-amz-content-sha256"} | HOP_BY_HOP
        kept = {k: v for k, v in self.headers.items() if k.lower() not in drop}
        request = AWSRequest(method=self.command, url=f"http://{self.headers['Host']}{self.path}", headers=kept)
        S3SigV4Auth(Credentials(key, secret), "s3", region).add_auth(request)
        return list(request.headers.items())

    def forward(self, body, headers):
        for attempt in range(2):
            if self.upstream is None:
                self.upstream = http.client.HTTPConnection(*self.owner.upstream, timeout=60)
            try:
                self.upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for k, v in headers:
                    if k.lower() not in HOP_BY_HOP:
                        self.upstream.putheader(k, v)
                self.upstream.endheaders(body)
                response = self.upstream.getresponse()
                data = response.read()
                return response.status, response.reason, response.getheaders(), data
            except (OSError, http.client.HTTPException):
                # a pooled upstream connection the server closed: one fresh try
                self.upstream.close()
                self.upstream = None
                if attempt == 1:
                    raise

    def answer_error(self, fault):
        if fault.html:
            kind = "text/html"
            body = f"<html><body><h1>{fault.status} Service Temporarily Unavailable</h1></body></html>".encode()
        else:
            kind = "application/xml"
            body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{fault.code}</Code>'
                    f"<Message>injected by the fault proxy</Message><Resource>{html.escape(self.path)}</Resource>"
                    f"<RequestId>fault</RequestId></Error>").encode()
        self.send_answer(fault.status, kind, body)

    def send_answer(self, status, kind, body, headers=None):
        """An answer made here, not the server's (no body for a HEAD)."""
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
