"""One HTTP attempt for a kind, through checks.fetch (the address policy, time-outs,
no redirects), with the receiver's answer turned into Sent or DeliveryError."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django.utils import timezone

from checks.errors import ErrorKind
from checks.fetch import FetchError, FetchResult, afetch
from checks.notify.transports import (
    ANSWERED,
    DeliveryError,
    Sent,
    _excerpt,
    parse_retry_after,
)

TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 256 * 1024
_NEVER_RETRIED = frozenset({ErrorKind.BLOCKED_ADDRESS, ErrorKind.INVALID_URL})


def post_json(
    url: str, payload: Any, headers: dict[str, str] | None = None
) -> FetchResult:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return request(url, "POST", body, headers)


def request(
    url: str, method: str, body: bytes | None, headers: dict[str, str] | None = None
) -> FetchResult:
    all_headers = {"Content-Type": "application/json; charset=utf-8"}
    all_headers.update(headers or {})
    call = afetch(
        url,
        method=method,
        headers=all_headers,
        content=body,
        timeout=TIMEOUT_SECONDS,
        max_bytes=MAX_RESPONSE_BYTES,
        follow_redirects=False,
    )
    try:
        return asyncio.run(call)
    except FetchError as exc:
        raise DeliveryError(exc.message, permanent=exc.kind in _NEVER_RETRIED) from exc


def expect_2xx(result: FetchResult) -> Sent:
    code = result.status_code
    excerpt = _excerpt(result.content)
    if 200 <= code < 300:
        return Sent(code, excerpt)
    raise DeliveryError(
        ANSWERED.format(code=code),
        status_code=code,
        response_body=excerpt,
        # A 4xx other than 408/429 will answer the same next time.
        permanent=400 <= code < 500 and code not in (408, 429),
        retry_after=parse_retry_after(
            result.headers.get("retry-after"), timezone.now()
        ),
    )
