"""Asking another service for its watches, through the one outbound door
(checks.fetch): its address policy, timeouts and body cap apply to an import
as to every page Pagewatch fetches."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from checks.fetch import FetchError, afetch
from monitors.moving.base import ImportRefused, max_bytes
from monitors.url_rule import url_syntax_error


def base_url(url: str) -> str:
    url = (url or "").strip()
    problem = url_syntax_error(url) if url else "Give the address of the service."
    if problem:
        raise ImportRefused(f"The source address cannot be used: {problem}")
    return url.rstrip("/")


def get(url: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
    try:
        fetched = asyncio.run(
            afetch(url, headers=dict(headers), max_bytes=max_bytes(), timeout=30)
        )
    except FetchError as exc:
        raise ImportRefused(f"Could not read {url[:200]}: {exc}") from None
    return fetched.status_code, fetched.content


def get_json(url: str, headers: Mapping[str, str], service: str) -> Any:
    status, body = get(url, headers)
    if status in (401, 403):
        raise ImportRefused(f"{service} refused the key ({status}): check the API key.")
    if status != 200:
        raise ImportRefused(f"{service} answered HTTP {status} for {url[:200]}.")
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise ImportRefused(f"{service} did not answer JSON at {url[:200]}.") from None
