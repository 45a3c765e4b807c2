"""What a page's scrapeOptions ask of the browser. Pure: no Playwright, no
network, so the runner, the judge and the dashboard can all ask. Which
options need a browser, and whether they are allowed at all, is the
domain's rule (monitors.rules): a monitor that never uses one is refused
them there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitors import rules
from monitors.rules import browser_options, languages, screenshot_format

__all__ = ["browser_options", "declared_wait_ms", "languages", "screenshot_format"]


def declared_wait_ms(options: Mapping[str, Any]) -> int:
    """waitFor plus every wait action (monitors.rules counts them)."""
    return rules.declared_wait_ms(options.get("waitFor"), options.get("actions"))
