"""Firecrawl's page actions (scrapeOptions.actions), performed in order on a
loaded page: wait, click, write, press, scroll, screenshot, scrape,
executeJavascript and pdf. Their shapes and limits are validated when a
monitor is saved (monitors.rules); here an action that cannot be done stops
the page with ActionFailed, naming the action (by its position) and why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import FloatRect, Page, Request
from playwright.async_api import TimeoutError as PlaywrightTimeout

from checks.browser.result import ActionOutputs, Shot

# How long a click or a scroll looks for its element.
ELEMENT_TIMEOUT_MS = 10_000
# A wait for an element ends this long before the page's time does, so it
# fails as itself (saying how long it waited), not as the page's time.
WAIT_MARGIN_MS = 1_000
# How long the page may take to settle after a click or a key press (a
# navigation it started, say) before the next action.
SETTLE_TIMEOUT_MS = 5_000
# After a click, a key press or a scroll, what it set loading (more rows, a
# lazy section, the next view of an app) is waited for: until none of the
# requests it started has been in flight for QUIET_MS, at most QUIET_CAP_MS.
QUIET_MS = 500
QUIET_CAP_MS = 3_000
# An executeJavascript result is kept up to this size (JSON).
RETURN_MAX_CHARS = 64 * 1024
# A scrape action's HTML is kept up to this size (beyond it, its beginning
# and "truncated": true, as for a script's result).
SCRAPE_MAX_CHARS = 512 * 1024
# A full-page screenshot shows at most this many pixels each way (from the
# top left): a page can make itself a million pixels tall, and Chromium
# holds the whole picture uncompressed (4 bytes a pixel) before encoding it.
FULL_PAGE_MAX_PX = 16_384


class _Unmet(Exception):
    """An action's own reason for failing, said as it is."""


class ActionFailed(Exception):
    def __init__(self, index: int, action: Mapping[str, Any], reason: str) -> None:
        self.message = f"Action {index + 1} ({label(action)}) failed: {reason}"
        super().__init__(self.message)


class Traffic:
    """The page's requests in flight, so that an action can wait for those
    it started (and not for a long poll that was open before it)."""

    def __init__(self) -> None:
        # In the order they started (a dict keeps it).
        self.in_flight: dict[Request, None] = {}

    def watch(self, page: Page) -> None:
        page.on("request", lambda request: self.in_flight.setdefault(request))
        page.on("requestfinished", lambda request: self.in_flight.pop(request, None))
        page.on("requestfailed", lambda request: self.in_flight.pop(request, None))

    def holding(self) -> str | None:
        """The address of what keeps the page from loading, if anything: the
        oldest request still in flight, the page itself or a script or
        stylesheet it must have first."""
        blocking = ("document", "script", "stylesheet")
        waiting = [r for r in self.in_flight if r.resource_type in blocking]
        return waiting[0].url if waiting else None

    @contextlib.asynccontextmanager
    async def settles(self, remaining_ms: Callable[[], float]) -> AsyncIterator[None]:
        """Around an action: afterwards, wait for what it set loading, for
        at most half the page's time left (`remaining_ms()`), so the next
        steps and the capture still fit."""
        before = set(self.in_flight)
        yield
        cap = min(QUIET_CAP_MS, remaining_ms() / 2) / 1000
        deadline = time.monotonic() + cap
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if self.in_flight.keys() - before:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= QUIET_MS / 1000:
                return
            await asyncio.sleep(0.05)


def label(action: Mapping[str, Any]) -> str:
    """An action in a few words: `click "#more"`, `wait 500 ms`."""
    kind = str(action.get("type", "?"))
    selector = action.get("selector")
    if kind == "wait":
        if selector:
            return f'wait for "{_short(selector)}"'
        return f"wait {action.get('milliseconds')} ms"
    if kind in ("click", "scroll") and selector:
        extra = f" {action.get('direction', 'down')}" if kind == "scroll" else ""
        return f'{kind}{extra} "{_short(selector)}"'
    if kind == "scroll":
        return f"scroll {action.get('direction', 'down')}"
    if kind == "press":
        return f'press "{_short(str(action.get("key", "")))}"'
    return kind


def _short(text: Any, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reason_of(exc: PlaywrightError) -> str:
    """Playwright's message without its call log: the first line."""
    text = (exc.message or str(exc)).strip()
    first = text.splitlines()[0] if text else "no reason given"
    # "Locator.click: Timeout 10000ms exceeded." -> "Timeout 10000ms exceeded."
    head, sep, rest = first.partition(": ")
    if sep and "." in head and " " not in head:
        first = rest
    return first[:300]


async def perform(
    page: Page,
    actions: Sequence[Mapping[str, Any]],
    outputs: ActionOutputs,
    remaining_ms: Callable[[], float],
    traffic: Traffic,
) -> None:
    """Do each action in turn; raises ActionFailed at the first that fails.
    `remaining_ms()` is the page's time left (a selector wait may use it)."""
    for index, action in enumerate(actions):
        outputs.current = index
        try:
            if action.get("type") in ("click", "press", "scroll"):
                async with traffic.settles(remaining_ms):
                    await _do(page, action, outputs, remaining_ms)
            else:
                await _do(page, action, outputs, remaining_ms)
        except _Unmet as exc:
            raise ActionFailed(index, action, str(exc)) from None
        except PlaywrightTimeout:
            raise ActionFailed(index, action, _timeout_reason(action)) from None
        except PlaywrightError as exc:
            raise ActionFailed(index, action, reason_of(exc)) from None
    outputs.current = None


def _timeout_reason(action: Mapping[str, Any]) -> str:
    kind = action.get("type")
    if kind in ("click", "scroll"):
        seconds = ELEMENT_TIMEOUT_MS / 1000
        return f"no visible element matched the selector within {seconds:g} s"
    return "it did not finish in time"


async def _do(
    page: Page,
    action: Mapping[str, Any],
    outputs: ActionOutputs,
    remaining_ms: Callable[[], float],
) -> None:
    kind = action.get("type")
    if kind == "wait":
        await _wait(page, action, remaining_ms)
    elif kind == "click":
        await _click(page, str(action["selector"]), all_=action.get("all") is True)
        await _settle(page)
    elif kind == "write":
        await page.keyboard.type(str(action.get("text", "")))
    elif kind == "press":
        await page.keyboard.press(str(action.get("key", "")))
        await _settle(page)
    elif kind == "scroll":
        await _scroll(page, action.get("selector"), action.get("direction") == "up")
    elif kind == "screenshot":
        outputs.screenshots.append(await screenshot(page, action))
    elif kind == "scrape":
        html = await page.content()
        scrape = {"url": page.url, "html": html[:SCRAPE_MAX_CHARS]}
        if len(html) > SCRAPE_MAX_CHARS:
            scrape["truncated"] = True
        outputs.scrapes.append(scrape)
    elif kind == "executeJavascript":
        value = await page.evaluate(str(action.get("script", "")))
        outputs.javascript_returns.append(_returned(value))
    elif kind == "pdf":
        outputs.pdfs.append(await _pdf(page, action))
    else:  # refused when the monitor was saved; a row from before the rule
        raise PlaywrightError(f"unknown action type {kind!r}")


async def _wait(
    page: Page, action: Mapping[str, Any], remaining_ms: Callable[[], float]
) -> None:
    selector = action.get("selector")
    if selector:
        timeout = max(remaining_ms() - WAIT_MARGIN_MS, 1)
        try:
            await page.wait_for_selector(
                str(selector), state="visible", timeout=timeout
            )
        except PlaywrightTimeout:
            seconds = f"{max(timeout / 1000, 1):.0f}"
            reason = f"no visible element matched the selector within {seconds} s"
            raise _Unmet(reason) from None
    else:
        await page.wait_for_timeout(int(action.get("milliseconds") or 0))


async def _click(page: Page, selector: str, *, all_: bool) -> None:
    found = page.locator(selector)
    if not all_:
        await found.first.click(timeout=ELEMENT_TIMEOUT_MS)
        return
    await found.first.wait_for(state="visible", timeout=ELEMENT_TIMEOUT_MS)
    for element in await found.all():
        await element.click(timeout=ELEMENT_TIMEOUT_MS)


async def _scroll(page: Page, selector: Any, up: bool) -> None:
    sign = -1 if up else 1
    if selector:
        element = page.locator(str(selector)).first
        await element.evaluate(
            "(el, sign) => el.scrollBy(0, sign * (el.clientHeight || innerHeight))",
            sign,
            timeout=ELEMENT_TIMEOUT_MS,
        )
    else:
        await page.evaluate("(sign) => window.scrollBy(0, sign * innerHeight)", sign)


async def _settle(page: Page) -> None:
    # Still loading after that: the next action (or the capture) may wait.
    with contextlib.suppress(PlaywrightTimeout):
        await page.wait_for_load_state("load", timeout=SETTLE_TIMEOUT_MS)


async def screenshot(page: Page, options: Mapping[str, Any]) -> Shot:
    """A screenshot action or format: fullPage, quality (JPEG), viewport."""
    viewport = options.get("viewport")
    if isinstance(viewport, Mapping):
        await page.set_viewport_size(
            {"width": int(viewport["width"]), "height": int(viewport["height"])}
        )
    quality = options.get("quality")
    full_page = options.get("fullPage") is True
    clip = await _full_page_clip(page) if full_page else None
    if isinstance(quality, int | float) and not isinstance(quality, bool):
        data = await page.screenshot(
            full_page=full_page, clip=clip, type="jpeg", quality=int(quality)
        )
        return Shot(data, "image/jpeg")
    data = await page.screenshot(full_page=full_page, clip=clip, type="png")
    return Shot(data, "image/png")


async def _full_page_clip(page: Page) -> FloatRect | None:
    """The top left FULL_PAGE_MAX_PX square of a page larger than that."""
    width, height = await page.evaluate(
        "() => { const e = document.documentElement, b = document.body || e;"
        " return [Math.max(e.scrollWidth, b.scrollWidth),"
        " Math.max(e.scrollHeight, b.scrollHeight)]; }"
    )
    if max(width, height) <= FULL_PAGE_MAX_PX:
        return None
    return {
        "x": 0,
        "y": 0,
        "width": min(width, FULL_PAGE_MAX_PX),
        "height": min(height, FULL_PAGE_MAX_PX),
    }


async def _pdf(page: Page, action: Mapping[str, Any]) -> Shot:
    data = await page.pdf(
        format=str(action.get("format") or "Letter"),
        landscape=action.get("landscape") is True,
        scale=float(action.get("scale") or 1),
    )
    return Shot(data, "application/pdf")


def _returned(value: Any) -> dict[str, Any]:
    """Firecrawl's {type, value} for what a script returned, kept small."""
    kind = {bool: "boolean", int: "number", float: "number", str: "string"}.get(
        type(value), "object" if value is not None else "undefined"
    )
    if isinstance(value, str) and len(value) > RETURN_MAX_CHARS:
        return {"type": "string", "value": value[:RETURN_MAX_CHARS], "truncated": True}
    text = json.dumps(value, default=str)
    if len(text) > RETURN_MAX_CHARS:
        return {"type": "string", "value": text[:RETURN_MAX_CHARS], "truncated": True}
    return {"type": kind, "value": value}
