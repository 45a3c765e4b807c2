"""A browser page that must stay inside an area (a crawl's scope): its main
frame's navigations are answered hop by hop, so an address outside the area
is never asked for, as a plain fetch stops there (checks.fetch's `stop_at`).

Chromium follows a redirect by itself, and Playwright's routes see neither
its hops nor those of an answer we fulfil. So each navigation of the main
frame is fetched here with `route.fetch(max_redirects=0)`: through the
context, with its cookies and headers and through its filtering proxy, so
every hop passes the same address policy. A final answer is handed to
Chromium as it came; a redirect is not. While the page loads, the page goes
on to a redirect's target inside the area by a new navigation (`next`); a
target outside it stops the page there (`stopped`), unloaded. A navigation
the page makes itself (a refresh, a script) to an address outside the area
is stopped the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Route
from playwright.async_api import TimeoutError as PlaywrightTimeout

from checks.errors import ErrorKind
from checks.fetch import FetchError
from checks.fetch.hops import REDIRECT_STATUSES, REFRESH_STATUS, redirect_target

# As many redirects as a plain fetch follows (checks.fetch.afetch).
MAX_REDIRECTS = 5


@dataclass(frozen=True)
class Stopped:
    """A redirect out of the area: its answer, and where it leads."""

    status: int
    headers: dict[str, str]
    url: str


@dataclass
class Stay:
    """The main frame's navigations of one page; `leaves(url)` is true of an
    address outside the area."""

    leaves: Callable[[str], bool]
    start: str
    # The addresses redirects led to, in order (the page's `redirects`).
    redirects: list[str] = field(default_factory=list)
    # A redirect's target inside the area, for the loading to go on to.
    next: str | None = None
    stopped: Stopped | None = None
    error: FetchError | None = None
    # True while the page loads: a redirect met then is gone on to by a new
    # navigation. Later (a script moving the page on) its hops inside the
    # area are Chromium's to follow.
    loading: bool = True

    async def navigate(
        self, route: Route, url: str, headers: dict[str, str] | None, timeout_ms: float
    ) -> None:
        """Answer one navigation request of the main frame."""
        if url != self.start and self.leaves(url):
            # The page moving itself out of the area (a refresh, a script),
            # as a plain fetch's followed refresh is stopped.
            self.redirects.append(url)
            self.stopped = Stopped(REFRESH_STATUS, {}, url)
            await route.abort("blockedbyclient")
            return
        try:
            answer = await route.fetch(
                headers=headers, max_redirects=0, timeout=max(timeout_ms, 1)
            )
        except PlaywrightTimeout:
            await route.abort("timedout")
            return
        except PlaywrightError:
            # The proxy's refusal, or the site's failure: the page's error
            # says which (checks.browser.page reads the proxy's refusals).
            await route.abort("failed")
            return
        location = answer.headers.get("location")
        if answer.status not in REDIRECT_STATUSES or not location:
            await route.fulfill(response=answer)
            return
        if not self.loading and not self._leaves(url, location):
            await route.fulfill(response=answer)
            return
        await answer.dispose()
        self._redirect(url, answer.status, answer.headers, location)
        await route.abort("aborted")

    def _leaves(self, url: str, location: str) -> bool:
        try:
            return self.leaves(str(redirect_target(httpx.URL(url), location)))
        except FetchError:
            return True  # judged (and refused) by _redirect

    def _redirect(
        self, url: str, status: int, headers: dict[str, str], location: str
    ) -> None:
        try:
            target = str(redirect_target(httpx.URL(url), location))
        except FetchError as exc:
            self.error = exc
            return
        if len(self.redirects) >= MAX_REDIRECTS:
            detail = str(MAX_REDIRECTS)
            self.error = FetchError(ErrorKind.TOO_MANY_REDIRECTS, detail=detail)
            return
        self.redirects.append(target)
        if self.leaves(target):
            self.stopped = Stopped(status, headers, target)
        else:
            self.next = target

    def take_next(self) -> str | None:
        target, self.next = self.next, None
        return target
