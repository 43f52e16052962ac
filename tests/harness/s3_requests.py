"""Raw, signed S3 requests for tests that must control the exact headers (``If-None-Match: *``).

No S3 client library is a project dependency (pyarrow's S3 filesystem cannot send a conditional
PUT), and what the tests need is one request shape: a PUT of a small body, signed with AWS
Signature Version 4 over an unsigned payload, path-style (``http://host:port/bucket/key``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import urllib.error
import urllib.request
from urllib.parse import quote, urlsplit

UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"


def put_object(
    endpoint: str,
    bucket: str,
    key: str,
    body: bytes,
    access_key: str,
    secret_key: str,
    region: str = "us-east-1",
    if_none_match: bool = False,
    timeout_s: float = 10.0,
) -> int:
    """PUT ``body`` at ``bucket/key``; returns the HTTP status (200 written, 412 the key existed
    and ``if_none_match`` was asked). Raises OSError when the endpoint does not answer."""
    url = f"{endpoint.rstrip('/')}/{bucket}/{quote(key)}"
    # A body without a Content-Type goes out as a form (urllib's default), which a servlet-based
    # server such as s3proxy parses into query parameters, and the signature no longer matches.
    headers = {"x-amz-content-sha256": UNSIGNED_PAYLOAD, "Content-Type": "application/octet-stream"}
    if if_none_match:
        headers["If-None-Match"] = "*"
    headers = _signed(headers, "PUT", url, access_key, secret_key, region)
    request = urllib.request.Request(url, data=body, method="PUT", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _signed(
    headers: dict[str, str], method: str, url: str, access_key: str, secret_key: str, region: str
) -> dict[str, str]:
    now = dt.datetime.now(dt.UTC)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    parts = urlsplit(url)
    signed = {**{name.lower(): value for name, value in headers.items()}, "host": parts.netloc, "x-amz-date": stamp}
    names = sorted(signed)
    canonical = "\n".join(
        [
            method,
            parts.path,
            parts.query,
            "".join(f"{name}:{signed[name].strip()}\n" for name in names),
            ";".join(names),
            signed["x-amz-content-sha256"],
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = f"AWS4{secret_key}".encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return {**headers, "x-amz-date": stamp, "Authorization": authorization}
