"""One HTTP attempt for a kind, through checks.fetch (the address policy, time-outs,
no redirects), with the receiver's answer turned into Sent or DeliveryError."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from checks.errors import parse_retry_after
from checks.fetch import FetchResult
from checks.notify.kinds.outbound import Attempt, Outbound
from checks.notify.transports import (
    ANSWERED,
    DeliveryError,
    Sent,
    response_excerpt,
)

TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 256 * 1024


def expect_2xx(result: FetchResult) -> Sent:
    code = result.status_code
    excerpt = response_excerpt(result.content)
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


@dataclass
class Request(Attempt):
    """One request; `answer` turns the receiver's answer into the outcome."""

    url: str
    body: bytes | None
    headers: dict[str, str] = field(default_factory=dict)
    answer: Callable[[FetchResult], Sent] = expect_2xx
    method: str = "POST"

    async def run(self, outbound: Outbound) -> Sent:
        return self.answer(await self.fetch(outbound))

    async def fetch(self, outbound: Outbound) -> FetchResult:
        headers = {"Content-Type": "application/json; charset=utf-8"}
        headers.update(self.headers)
        return await outbound.fetch(
            self.url,
            self.method,
            self.body,
            headers,
            timeout=TIMEOUT_SECONDS,
            max_bytes=MAX_RESPONSE_BYTES,
        )


def post_json(
    url: str,
    payload: Any,
    headers: dict[str, str] | None = None,
    answer: Callable[[FetchResult], Sent] = expect_2xx,
) -> Request:
    """A JSON POST (`payload` as bytes, or anything json.dumps takes)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return Request(url, body, headers or {}, answer)


def fetch_now(request: Request) -> FetchResult:
    """The request sent now, on a loop of its own (the dashboard's calls)."""

    async def go() -> FetchResult:
        async with Outbound() as outbound:
            return await request.fetch(outbound)

    return asyncio.run(go())
