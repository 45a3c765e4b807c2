"""What a page's scrapeOptions ask of the browser. Pure: no Playwright, no
network, so the runner, the judge and the dashboard can all ask. Whether
they are allowed at all is the domain's rule (monitors.rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitors import rules


def screenshot_format(options: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The screenshot format's options ({} for the plain "screenshot"), or None."""
    formats = options.get("formats")
    for fmt in formats if isinstance(formats, list) else []:
        if fmt == "screenshot":
            return {}
        if isinstance(fmt, Mapping) and fmt.get("type") == "screenshot":
            return fmt
    return None


def languages(options: Mapping[str, Any]) -> list[str]:
    location = options.get("location")
    raw = location.get("languages") if isinstance(location, Mapping) else None
    return [str(item) for item in raw if str(item).strip()] if raw else []


def browser_options(options: Mapping[str, Any]) -> list[str]:
    """The options only a browser can honour, named as in `notApplied`."""
    needed = []
    if options.get("waitFor"):
        needed.append("waitFor")
    if options.get("actions"):
        needed.append("actions")
    if screenshot_format(options) is not None:
        needed.append("formats.screenshot")
    if options.get("mobile") is True:
        needed.append("mobile")
    if languages(options):
        needed.append("location.languages")
    return needed


def declared_wait_ms(options: Mapping[str, Any]) -> int:
    """waitFor plus every wait action (monitors.rules counts them)."""
    return rules.declared_wait_ms(options.get("waitFor"), options.get("actions"))
