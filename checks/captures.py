"""Signed, expiring links to the screenshots and PDFs the browser took.

A link names a capture by its content hash and carries a timestamped
signature (Django's signing, keyed by SECRET_KEY): whoever holds the link may
fetch that one capture for at least CAPTURE_URL_TTL_SECONDS, and nothing
else -- as Firecrawl's screenshot URLs work for API clients, which fetch them
without an API key. Links are made each time results are read, never stored.

The timestamp is the start of the window (a quarter of the links' lifetime)
the link was made in, not its second: every read within a window hands out
the same link, so a check's answer, and its ETag, stay the same while nothing
else changes (monitors.api.conditional). A link is honoured for the lifetime
plus one window after that start, so one made at a window's end still works
its whole lifetime, and none works longer than a quarter more.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core import signing
from django.urls import reverse

from checks.content.visual import NotComparable, VisualChange, visual_change
from checks.models import Capture, PageResult
from monitors.links import public_url

SALT = "pagewatch.capture"


class LinkExpired(Exception):
    """A genuine link whose time is up."""


def _lifetime() -> int:
    return int(settings.CAPTURE_URL_TTL_SECONDS)


def _window() -> int:
    """Seconds within which every link made is the same link."""
    return max(1, _lifetime() // 4)


class _WindowSigner(signing.TimestampSigner):
    """Signs with the start of the current window instead of the second."""

    def timestamp(self) -> str:
        window = _window()
        return signing.b62_encode(int(time.time()) // window * window)


def capture_path(digest: str) -> str:
    """The site-relative signed link (the dashboard's <img src>)."""
    token = _WindowSigner(salt=SALT).sign(digest)
    return reverse("capture", kwargs={"token": token})


def capture_url(digest: str) -> str:
    """The absolute signed link (API results, e-mails)."""
    return public_url(capture_path(digest))


def capture_for(token: str) -> Capture | None:
    """The capture a link names; None for a forged or mangled link; raises
    LinkExpired for a genuine one past its time."""
    signer = signing.TimestampSigner(salt=SALT)
    try:
        digest = signer.unsign(token, max_age=_lifetime() + _window())
    except signing.SignatureExpired:
        raise LinkExpired from None
    except signing.BadSignature:
        return None
    return Capture.objects.filter(content_hash=digest).first()


def with_links(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A page's metadata as clients read it: the screenshot and the actions'
    screenshots and PDFs (stored by content hash) as signed links."""
    shown = dict(metadata)
    if isinstance(shown.get("screenshot"), str):
        shown["screenshot"] = capture_url(shown["screenshot"])
    actions = shown.get("actions")
    if isinstance(actions, Mapping):
        shown["actions"] = {
            **actions,
            "screenshots": [capture_url(d) for d in actions.get("screenshots") or []],
            "pdfs": [capture_url(d) for d in actions.get("pdfs") or []],
        }
    return shown


def screenshot_links(page: PageResult) -> dict[str, Any]:
    """What the page view shows of a result's screenshots: before and after
    as signed links, and the visual change when the two differ (or why they
    could not be compared)."""
    after = page.screenshot
    if after is None:
        return {}
    before = page.previous_screenshot()
    shown: dict[str, Any] = {"screenshot_after": capture_path(after)}
    if before is not None:
        shown["screenshot_before"] = capture_path(before)
        shown["screenshot_changed"] = before != after
    if before is not None and before != after:
        try:
            shown["visual"] = visual_change_of(page, before)
        except NotComparable as exc:
            shown["visual_problem"] = str(exc)
    return shown


def visual_change_of(page: PageResult, before: str) -> VisualChange | None:
    """How the page's screenshot differs from `before` (the previous one):
    compared the first time it is asked for and kept on the row with the two
    captures it compared, so a page is compared once however often it is
    opened. None when a screenshot is no longer kept; raises NotComparable
    for screenshots that cannot be compared (kept too, with the reason)."""
    after = page.screenshot
    kept = page.visual_change or {}
    if after is not None and (kept.get("before"), kept.get("after")) == (
        before,
        after,
    ):
        if "problem" in kept:
            raise NotComparable(kept["problem"])
        return VisualChange.from_json(kept)
    data = dict(
        Capture.objects.filter(content_hash__in={after, before}).values_list(
            "content_hash", "data"
        )
    )
    if after not in data or before not in data:
        return None
    pair = {"before": before, "after": after}
    try:
        change = visual_change(bytes(data[before]), bytes(data[after]))
    except NotComparable as exc:
        _keep(page, pair | {"problem": str(exc)})
        raise
    _keep(page, pair | change.as_json())
    return change


def _keep(page: PageResult, stored: dict[str, Any]) -> None:
    PageResult.objects.filter(pk=page.pk).update(visual_change=stored)
    page.visual_change = stored
