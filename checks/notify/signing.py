"""Webhook signatures: Firecrawl's and Standard Webhooks', from the team's secret.

Every delivery carries both (docs/webhooks.md shows how to verify them):

* ``X-Firecrawl-Signature: sha256=<hex>`` — HMAC-SHA256 of the raw body, keyed
  with the secret string exactly as shown (UTF-8 bytes, ``whsec_`` included),
  which is what Firecrawl's documentation tells receivers to compute.
* ``webhook-id``, ``webhook-timestamp``, ``webhook-signature: v1,<base64>`` —
  HMAC-SHA256 of ``"{id}.{timestamp}.{body}"``. As the Standard Webhooks spec
  says, the key is the base64-decoded part after ``whsec_``, so the official
  ``standardwebhooks`` libraries (and Svix's) verify it unchanged. Secrets
  minted by Pagewatch always have that form; an older secret that does not
  decode as base64 is used as its UTF-8 bytes instead.

After a rotation the replaced secret signs too, for Team's grace period: the
Standard Webhooks header then carries one signature per secret, space-separated
as the spec allows, so a receiver still holding the old secret keeps verifying.
Firecrawl's header has room for one signature only: it is always made with the
current secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from datetime import datetime

from monitors.models import Team

FIRECRAWL_HEADER = "X-Firecrawl-Signature"
SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix, not a secret)
# How old a webhook-timestamp a receiver should accept (Standard Webhooks uses 5 min).
DEFAULT_TOLERANCE_SECONDS = 300


def signing_secrets(team: Team, now: datetime) -> list[str]:
    """The secrets that sign a delivery now, the current one first. A team
    whose webhook predates secrets being made with it gets one here."""
    team.ensure_webhook_secret()
    return team.webhook_signing_secrets(now)


def standard_key(secret: str) -> bytes:
    """The HMAC key Standard Webhooks uses for `secret`."""
    if secret.startswith(SECRET_PREFIX):
        try:
            return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            pass
    return secret.encode()


def firecrawl_signature(secret: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_headers(
    secret: str,
    msg_id: str,
    timestamp: int,
    body: bytes,
    *,
    previous: Sequence[str] = (),
) -> dict[str, str]:
    """The signing headers; `previous` secrets (in their grace period) add
    their Standard Webhooks signatures after the current one's."""
    standard = [
        standard_signature(key, msg_id, timestamp, body) for key in (secret, *previous)
    ]
    return {
        FIRECRAWL_HEADER: firecrawl_signature(secret, body),
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(standard),
    }


# --- Verification (what a receiver does; mirrors docs/webhooks.md) ----------


def verify_firecrawl(secret: str, body: bytes, header: str | None) -> bool:
    if not header or "=" not in header:
        return False
    algorithm, _, received = header.partition("=")
    if algorithm != "sha256":
        return False
    expected = firecrawl_signature(secret, body).partition("=")[2]
    return hmac.compare_digest(expected, received)


def verify_standard(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
) -> bool:
    """Standard Webhooks verification; `headers` must be case-insensitive
    (an httpx.Headers, a Django request.headers) or use lower-case names."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not (msg_id and timestamp and signatures):
        return False
    try:
        sent_at = int(timestamp)
    except ValueError:
        return False
    if abs(now - sent_at) > tolerance:
        return False
    expected = standard_signature(secret, msg_id, sent_at, body)
    # The header may carry several space-separated signatures (key rotation).
    return any(hmac.compare_digest(expected, sig) for sig in signatures.split())
