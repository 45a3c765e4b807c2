"""What the browser hands back: a page as rendered, and what its screenshot
format and actions produced. Plain data (no Playwright), so the extract and
record stages (checks.pipeline) read it without loading the browser."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from checks.fetch import FetchResult


@dataclass(frozen=True)
class Shot:
    """A screenshot or a PDF, as the browser made it."""

    data: bytes
    media_type: str  # image/png, image/jpeg, application/pdf

    @property
    def digest(self) -> str:
        """Its content address (checks.models.Capture)."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class ActionOutputs:
    """What the actions produced (Firecrawl's `actions` object), and which
    action is running (for the page's error when its time runs out)."""

    screenshots: list[Shot] = field(default_factory=list)
    scrapes: list[dict[str, Any]] = field(default_factory=list)
    javascript_returns: list[dict[str, Any]] = field(default_factory=list)
    pdfs: list[Shot] = field(default_factory=list)
    current: int | None = None  # index of the action under way

    def __bool__(self) -> bool:
        return bool(
            self.screenshots or self.scrapes or self.javascript_returns or self.pdfs
        )


@dataclass
class BrowserResult(FetchResult):
    """A page as the browser rendered it: `content` is the page's HTML after
    its scripts, waitFor and actions ran."""

    screenshot: Shot | None = None
    actions: ActionOutputs = field(default_factory=ActionOutputs)
    # Requests the proxy or the guards refused (one line per host).
    refused: list[str] = field(default_factory=list)
    # A page remembered as built by scripts whose HTML, as served, now has
    # its content: the next check can fetch it plainly again.
    plain_would_do: bool = False
