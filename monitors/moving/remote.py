"""Asking another service for its watches, through the one outbound door
(checks.fetch): its address policy, timeouts and body cap apply to an import
as to every page Pagewatch fetches."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from checks.fetch import FetchError, afetch
from monitors.moving.base import ImportRefused, max_bytes
from monitors.url_rule import url_syntax_error

# How many watches a reader reads between two reports of its progress; and
# how long one may take to read a service in all (the preview task's time
# limit is above it, with room to judge what was read): past it the service
# is too slow for one import, and the page says so rather than the worker
# being killed mid-way.
PROGRESS_EVERY = 25
READ_BUDGET_SECONDS = 8 * 60

# Told how many of how many watches were read (0: how many is not known yet).
Progress = Callable[[int, int], None]


class NotFound(ImportRefused):
    """The service answered 404: an address that is not its API, or a watch
    removed between listing and reading it."""


class Reading:
    """One reading of a service: how far it got, told to `progress` now and
    then, and refused once it has taken longer than READ_BUDGET_SECONDS."""

    def __init__(self, service: str, progress: Progress | None = None) -> None:
        self.service = service
        self.progress = progress
        self.deadline = time.monotonic() + READ_BUDGET_SECONDS

    def at(self, done: int, total: int = 0) -> None:
        """About to read watch number `done` (from 0) of `total`."""
        if time.monotonic() >= self.deadline:
            of = f" of {total:,}" if total else ""
            raise ImportRefused(
                f"{self.service} answered too slowly: {done:,}{of} watches were "
                f"read in {READ_BUDGET_SECONDS // 60} minutes, the longest one "
                "import waits. Try again when it is less busy, or upload a file "
                "of its watches instead."
            )
        if self.progress is not None and done % PROGRESS_EVERY == 0:
            self.progress(done, total)


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
    if status == 404:
        raise NotFound(f"{service} answered HTTP 404 for {url[:200]}.")
    if status != 200:
        raise ImportRefused(f"{service} answered HTTP {status} for {url[:200]}.")
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise ImportRefused(f"{service} did not answer JSON at {url[:200]}.") from None
