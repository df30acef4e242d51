"""Temporary credentials the way AWS hands them out, on loopback, for the credential tests: an instance
metadata service (IMDSv2: a session token first), an ECS-style container credentials endpoint (with an
authorization token), and STS's AssumeRoleWithWebIdentity. Each issues fresh credentials valid for
`lifetime` seconds: the S3 server's own key and secret, and a new session token that the fault proxy's
token gate accepts until it expires. Every issue is logged (time, source, token, expiry), so a test can
see renewals happen ahead of expiry; `down` makes every endpoint answer 500.
"""

import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

ROLE = "os2g-test-role"
CONTAINER_AUTH = "container-auth-token"


def iso(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class CredentialServer:
    def __init__(self, access_key, secret_key, lifetime=4.0):
        self.access_key, self.secret_key, self.lifetime = access_key, secret_key, lifetime
        self.lock = threading.Lock()
        self.issued = []  # (time, source, token, expiry, detail)
        self.imds_tokens = set()
        self.web_identities = []  # the WebIdentityToken of each AssumeRoleWithWebIdentity
        self.down = False
        owner = self

        class Handler(CredentialHandler):
            server_owner = owner

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def issue(self, source, detail=""):
        now = time.time()
        token = f"{source}-{uuid.uuid4()}"
        with self.lock:
            self.issued.append((now, source, token, now + self.lifetime, detail))
        return token, now + self.lifetime

    def valid(self, access_key, token):
        """The token gate of the fault proxy: a token this server issued, not expired, with its key."""
        now = time.time()
        with self.lock:
            return access_key == self.access_key and any(t == token and now < exp for _, _, t, exp, _ in self.issued)

    def expire(self, token=None):
        """Makes `token` (default: every token issued so far) expired now, as a server revoking it would."""
        now = time.time() - 0.001
        with self.lock:
            self.issued = [(t, s, tok, min(exp, now) if token in (None, tok) else exp, d)
                           for t, s, tok, exp, d in self.issued]

    def issues(self, source=None):
        with self.lock:
            return [i for i in self.issued if source is None or i[1] == source]

    def secrets(self):
        """Everything secret this server handed out: the key's secret and every session token."""
        with self.lock:
            return [self.secret_key] + [tok for _, _, tok, _, _ in self.issued]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class CredentialHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_owner: CredentialServer = None

    def log_message(self, *args):
        pass

    def answer(self, status, body, kind="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_PUT(self):
        owner = self.server_owner
        if owner.down:
            return self.answer(500, "down")
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            token = str(uuid.uuid4())
            owner.imds_tokens.add(token)
            return self.answer(200, token, "text/plain")
        self.answer(400, "bad request")

    def do_GET(self):
        owner = self.server_owner
        if owner.down:
            return self.answer(500, "down")
        if self.path.startswith("/latest/meta-data/iam/security-credentials"):
            if self.headers.get("X-aws-ec2-metadata-token") not in owner.imds_tokens:
                return self.answer(401, "")  # IMDSv2 only: no session token, no answer
            if self.path.rstrip("/").endswith("security-credentials"):
                return self.answer(200, ROLE, "text/plain")
            token, expiry = owner.issue("imds")
            return self.answer(200, credentials_json(owner, token, expiry, imds=True))
        if self.path.startswith("/ecs"):
            if self.headers.get("Authorization") != CONTAINER_AUTH:
                return self.answer(403, '{"message": "bad authorization"}')
            token, expiry = owner.issue("ecs")
            return self.answer(200, credentials_json(owner, token, expiry, imds=False))
        self.answer(404, "not found")

    def do_POST(self):
        owner = self.server_owner
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode())
        if owner.down:
            return self.answer(500, "down")
        if form.get("Action") != ["AssumeRoleWithWebIdentity"]:
            return self.answer(400, "<Error><Code>InvalidAction</Code></Error>", "text/xml")
        identity = form.get("WebIdentityToken", [""])[0]
        owner.web_identities.append(identity)
        token, expiry = owner.issue("sts", identity)
        self.answer(200, f"""<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>{owner.access_key}</AccessKeyId>
      <SecretAccessKey>{owner.secret_key}</SecretAccessKey>
      <SessionToken>{token}</SessionToken>
      <Expiration>{iso(expiry)}</Expiration>
    </Credentials>
    <SubjectFromWebIdentityToken>system:serviceaccount:default:trainer</SubjectFromWebIdentityToken>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/{ROLE}/os2g</Arn><AssumedRoleId>AROA:os2g</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>""", "text/xml")


def credentials_json(owner, token, expiry, imds):
    fields = [f'"AccessKeyId": "{owner.access_key}"', f'"SecretAccessKey": "{owner.secret_key}"',
              f'"Token": "{token}"', f'"Expiration": "{iso(expiry)}"']
    if imds:
        fields = ['"Code": "Success"', f'"LastUpdated": "{iso(time.time())}"', '"Type": "AWS-HMAC"'] + fields
    return "{" + ", ".join(fields) + "}"
