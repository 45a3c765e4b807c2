"""A page job: one URL of one target in one check, and what fetching it needs.

Made by the sources (checks.pipeline.sources, checks.crawl) and stored in CheckBatch
rows as a reference (`ref`), so any worker can rebuild it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from checks.content.change_rules import ChangeRules

# scrapeOptions.timeout (ms) is honoured within these bounds (seconds).
MIN_PAGE_TIMEOUT, MAX_PAGE_TIMEOUT = 1.0, 300.0
MOBILE_USER_AGENT_PREFIX = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148"
)


def page_timeout(options: Mapping[str, Any]) -> float | None:
    """The seconds scrapeOptions' `timeout` gives a request (None: the
    default)."""
    raw = options.get("timeout")
    if not isinstance(raw, int | float) or isinstance(raw, bool) or raw <= 0:
        return None
    return min(max(raw / 1000, MIN_PAGE_TIMEOUT), MAX_PAGE_TIMEOUT)


def verifies_tls(options: Mapping[str, Any]) -> bool:
    """Whether scrapeOptions leave TLS certificates checked."""
    return options.get("skipTlsVerification") is not True


class Via(StrEnum):
    """Why a page is fetched with the browser."""

    OPTIONS = "options"  # its scrapeOptions need one (waitFor, actions...)
    REMEMBERED = "remembered"  # an earlier check found it built by scripts
    DETECTED = "detected"  # this check's plain fetch looked built by scripts
    MONITOR = "monitor"  # the monitor is set to always use one (fetchWith)


@dataclass(frozen=True)
class PageJob:
    """One URL of one target in one check."""

    target_id: uuid.UUID
    url: str
    options: Mapping[str, Any]
    credits: int
    scrape_id: uuid.UUID
    # Crawl pages: link depth from the start URL (or a sitemap), whether the
    # page's links are followed, and whether it is a page of the result (a
    # start URL outside includePaths is fetched for its links only).
    depth: int = 0
    follow: bool = False
    record: bool = True
    # The monitor's noise rule (checks.content.noise); not part of the ref:
    # read from the monitor whenever the job is rebuilt.
    ignore_lines: tuple[str, ...] = ()
    # The monitor's change rules (checks.content.change_rules), read from
    # the monitor like ignore_lines; None when it has none.
    change_rules: ChangeRules | None = None
    # The monitor's fetchWith ("auto", "http" or "browser"); read from the
    # monitor like ignore_lines ("" when not known: planning, as "auto").
    fetch_with: str = ""
    # Why the page is fetched with the browser ("" for plain HTTP), one of
    # Via; chosen per batch (checks.runner), except DETECTED, which a batch
    # that handed the page over stores in the page's ref with its detail.
    browser: str = ""
    browser_detail: str = ""

    def ref(self) -> list[Any]:
        """This job in CheckBatch.pages (see from_ref)."""
        ref: list[Any] = [str(self.target_id), self.url, str(self.scrape_id)]
        detected = self.browser == Via.DETECTED
        if self.follow or self.depth or not self.record or detected:
            ref += [self.depth, self.follow, self.record]
        if detected:
            ref.append(self.browser_detail)
        return ref

    @classmethod
    def from_ref(
        cls,
        ref: Sequence[Any],
        options: Mapping[str, Any],
        credits: int,
        ignore_lines: tuple[str, ...] = (),
        fetch_with: str = "",
        change_rules: ChangeRules | None = None,
    ) -> PageJob:
        target_id, url, scrape_id, *crawl = ref
        depth, follow, record = crawl[:3] if len(crawl) >= 3 else (0, False, True)
        detected = str(crawl[3]) if len(crawl) > 3 else None
        return cls(
            uuid.UUID(target_id), url, options, credits, uuid.UUID(scrape_id),
            depth=int(depth), follow=bool(follow), record=bool(record),
            ignore_lines=ignore_lines,
            change_rules=change_rules,
            fetch_with=fetch_with,
            browser=Via.DETECTED if detected is not None else "",
            browser_detail=detected or "",
        )  # fmt: skip

    def via(self, browser: str, detail: str = "") -> PageJob:
        """This job fetched with the browser for that reason ("": plain HTTP)."""
        return replace(self, browser=browser, browser_detail=detail)

    @property
    def headers(self) -> dict[str, str]:
        raw = self.options.get("headers")
        headers = (
            {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        )
        wants_mobile = self.options.get("mobile") is True
        if wants_mobile and not any(k.lower() == "user-agent" for k in headers):
            headers["User-Agent"] = (
                f"{MOBILE_USER_AGENT_PREFIX} {settings.OUTBOUND_USER_AGENT}"
            )
        return headers

    @property
    def timeout(self) -> float | None:
        return page_timeout(self.options)

    @property
    def verify_tls(self) -> bool:
        return verifies_tls(self.options)

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""
