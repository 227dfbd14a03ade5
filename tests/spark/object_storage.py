"""A local S3-compatible server for the tests: moto's server mode (the S3 API as AWS
answers it, IAM authentication included, from PyPI, in this process), wrapped to count
the bytes it serves so a test can show ranged reads against the store's size.

Buckets: ``captures`` (the reference stores under ``<case>/store/``) and ``secret``
(a copy the test user may not read).  After set-up every request must be signed by
the test user, whose policy allows ``captures`` only.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field

from tests.support import REFERENCE

BUCKET, DENIED_BUCKET = "captures", "secret"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    """What the server sent back for object GETs."""

    bytes: int = 0
    gets: int = 0
    ranged: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        with self.lock:
            self.bytes = self.gets = self.ranged = 0


class _Counting:
    """WSGI middleware: counts body bytes of GETs of objects (not listings)."""

    def __init__(self, app, served: Served):
        self.app, self.served = app, served

    def __call__(self, environ, start_response):
        body = self.app(environ, start_response)
        is_object_get = environ["REQUEST_METHOD"] == "GET" and environ.get("PATH_INFO", "/").strip("/").count("/") >= 1 and "list-type" not in environ.get("QUERY_STRING", "")
        if not is_object_get:
            return body
        served = self.served

        def counted():
            n = 0
            for chunk in body:
                n += len(chunk)
                yield chunk
            with served.lock:
                served.bytes += n
                served.gets += 1
                served.ranged += "HTTP_RANGE" in environ

        return counted()


class S3Server:
    def __init__(self, cases: tuple[str, ...]):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import WSGIRequestHandler, make_server

        class Quiet(WSGIRequestHandler):
            def log_request(self, *a, **k):
                pass

        self.served = Served()
        self.port = free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        app = _Counting(DomainDispatcherApplication(create_backend_app), self.served)
        self._server = make_server("127.0.0.1", self.port, app, threaded=True, request_handler=Quiet)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.cases = cases
        self.store_bytes = {}
        self._set_up()

    def _set_up(self) -> None:
        import boto3
        import moto.settings
        from pyarrow import fs

        admin = dict(endpoint_url=f"http://{self.endpoint}", region_name=REGION, aws_access_key_id="admin", aws_secret_access_key="admin")
        s3 = boto3.client("s3", **admin)
        for b in (BUCKET, DENIED_BUCKET):
            s3.create_bucket(Bucket=b)
        plain = fs.S3FileSystem(access_key="admin", secret_key="admin", endpoint_override=self.endpoint, scheme="http", region=REGION)
        for case in self.cases:
            src = REFERENCE / case / "store"
            for bucket in (BUCKET, DENIED_BUCKET):
                fs.copy_files(str(src), f"{bucket}/{case}/store", source_filesystem=fs.LocalFileSystem(), destination_filesystem=plain)
            self.store_bytes[case] = {d: sum(p.stat().st_size for p in (src / d).rglob("*") if p.is_file()) for d in ("commitlog", "consumequeue", "index")}
        iam = boto3.client("iam", **admin)
        iam.create_user(UserName="reader")
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]}]}
        iam.put_user_policy(UserName="reader", PolicyName="captures-only", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]
        # from now on every request is authenticated against IAM (moto's switch)
        self._saved_auth = moto.settings.INITIAL_NO_AUTH_ACTION_COUNT
        moto.settings.INITIAL_NO_AUTH_ACTION_COUNT = 0

    def uri(self, case: str, bucket: str = BUCKET) -> str:
        return f"s3://{bucket}/{case}/store"

    def options(self, **over) -> dict:
        """The source options that reach this server, as a user passes them."""
        d = {"fs.s3.endpoint": self.endpoint, "fs.s3.scheme": "http", "fs.s3.region": REGION,
             "fs.s3.accessKey": self.access_key, "fs.s3.secretKey": self.secret_key}
        d.update(over)
        return {k: v for k, v in d.items() if v is not None}

    def env(self) -> dict:
        """The standard AWS variables for this server and user."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": f"http://{self.endpoint}"}

    def stop(self) -> None:
        import moto.settings

        moto.settings.INITIAL_NO_AUTH_ACTION_COUNT = self._saved_auth
        self._server.shutdown()
        self._thread.join(10)
