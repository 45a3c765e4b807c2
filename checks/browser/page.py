"""One page in the browser: a fresh context behind its own filtering proxy,
the navigation, waitFor, the actions, the screenshot format, and the rendered
page handed back as a FetchResult (a BrowserResult) for the extract stage
(checks.pipeline.extract) to read like any other.

Safety, in layers: the proxy (checks.browser.proxy) decides every connection;
the context's `route` and `route_web_socket` guards refuse other schemes and
forbidden IP literals before a request leaves the page, and send the
monitor's own headers to the page's origin only (never to third parties the
page loads); service workers and downloads are off; the page has a time
budget and a byte budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    Request,
    Response,
    Route,
    WebSocketRoute,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout

from checks.browser import actions as page_actions
from checks.browser import chromium, detect
from checks.browser.actions import ActionFailed, reason_of
from checks.browser.executable import available, unavailable_message
from checks.browser.options import declared_wait_ms, languages, screenshot_format
from checks.browser.proxy import GuardProxy, refusal_key
from checks.browser.result import ActionOutputs, BrowserResult, Shot
from checks.errors import ErrorKind
from checks.fetch import FetchError, Resolver, ip_literal
from checks.fetch.errors import human_size
from checks.fetch.transport import system_resolver, vetted_addresses
from checks.jobs import MAX_PAGE_TIMEOUT, PageJob, Via

logger = logging.getLogger(__name__)

DESKTOP_VIEWPORT = {"width": 1280, "height": 800}
MOBILE_VIEWPORT = {"width": 390, "height": 844}
# After the load event, how long the page may keep fetching (a script-built
# page fetches its content) before it is captured anyway.
SETTLE_MS = 3000
# Time kept back from the page's loading for its screenshot and capture.
CAPTURE_MS = 2000
# After the page settled, how long an app whose root is still empty may take
# to fill it: its content is on its way (asked for after a timer, a consent
# check or a token), and its network was quiet in between.
CONTENT_WAIT_MS = 10_000
# True once the page has content: no app root left empty (the roots
# checks.browser.detect knows), or enough text elsewhere.
_FILLED = """([ids, tags, little]) => {
  const empty = (node) => !node.firstElementChild && !node.textContent.trim();
  const roots = [...document.querySelectorAll("[id]")]
    .filter((node) => ids.includes(node.id.trim().toLowerCase()))
    .concat(tags.flatMap((tag) => [...document.getElementsByTagName(tag)]));
  if (!roots.some(empty)) return true;
  const text = (document.body ? document.body.innerText : "").replace(/\\s+/g, " ");
  return text.trim().length >= little;
}"""
# Headers the browser sets itself, or that would make a navigation conditional.
_OWN_HEADERS = frozenset(
    {
        "user-agent", "host", "connection", "content-length", "transfer-encoding",
        "keep-alive", "te", "upgrade", "proxy-authorization", "accept-encoding",
        "if-none-match", "if-modified-since",
    }
)  # fmt: skip
# A page that navigates on more than this many times (by script, or by
# refresh) is a redirect loop: it is stopped then, however fast the machine
# got it there, rather than left to run out of time as a slow page.
SCRIPT_REDIRECTS = 20
BROWSER_DIED = (
    "The browser stopped while showing the page (it crashed or was stopped); "
    "the next check starts it again."
)
STOPPED_ANSWERING = (
    "The browser stopped responding while showing the page, so it was restarted "
    "for the next check."
)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
# Chromium's network errors as our kinds (anything else: browser).
_NET_ERRORS = {
    "ERR_NAME_NOT_RESOLVED": ErrorKind.DNS,
    "ERR_CONNECTION_REFUSED": ErrorKind.REFUSED,
    "ERR_CONNECTION_RESET": ErrorKind.CONNECT,
    "ERR_CONNECTION_CLOSED": ErrorKind.CONNECT,
    "ERR_EMPTY_RESPONSE": ErrorKind.PROTOCOL,
    "ERR_TUNNEL_CONNECTION_FAILED": ErrorKind.CONNECT,
    "ERR_TOO_MANY_REDIRECTS": ErrorKind.TOO_MANY_REDIRECTS,
}


def budget_seconds(job: PageJob) -> float:
    """The page's whole time in the browser: its timeout when it set one,
    else FETCH_TIMEOUT_SECONDS plus the waiting its options declare."""
    if job.timeout is not None:
        return job.timeout
    waits = declared_wait_ms(job.options) / 1000
    return min(float(settings.FETCH_TIMEOUT_SECONDS) + waits, MAX_PAGE_TIMEOUT)


async def render(
    browser: Browser,
    job: PageJob,
    headers: Mapping[str, str],
    resolver: Resolver | None,
    user_agent: str,
) -> BrowserResult:
    """Load and capture one page; raises FetchError (with an action's own
    words for a failed action) when there is no page to judge."""
    proxy = GuardProxy(
        resolver or system_resolver, max_bytes=int(settings.BROWSER_MAX_BYTES)
    )
    await proxy.start()
    try:
        context = await browser.new_context(
            **context_options(job, headers, user_agent),
            proxy={"server": proxy.url, "bypass": "<-loopback>"},
        )
        try:
            return await _Visit(context, job, headers, proxy).run()
        finally:
            if not await _close(context):
                await chromium.service().discard(browser)
                # Said instead of the page's own error (its time ran out,
                # say), unless the caller is cancelling the page.
                if not isinstance(sys.exception(), asyncio.CancelledError):
                    raise FetchError(ErrorKind.BROWSER, detail=STOPPED_ANSWERING)
    finally:
        await proxy.close()


def context_options(
    job: PageJob, headers: Mapping[str, str], user_agent: str
) -> dict[str, Any]:
    mobile = job.options.get("mobile") is True
    shot = screenshot_format(job.options) or {}
    viewport = shot.get("viewport") or (MOBILE_VIEWPORT if mobile else DESKTOP_VIEWPORT)
    given = {k.lower(): v for k, v in headers.items()}
    options: dict[str, Any] = {
        "viewport": _size(viewport),
        "user_agent": given.get("user-agent") or user_agent,
        "service_workers": "block",
        "accept_downloads": False,
        "ignore_https_errors": not job.verify_tls,
    }
    if mobile:
        options |= {"is_mobile": True, "has_touch": True, "device_scale_factor": 2}
    wanted = languages(job.options)
    if wanted:
        options["locale"] = wanted[0]
        options["extra_http_headers"] = {"Accept-Language": ", ".join(wanted)}
    return options


def _size(viewport: Mapping[str, Any]) -> dict[str, int]:
    return {"width": int(viewport["width"]), "height": int(viewport["height"])}


def own_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The monitor's headers for the page's origin (cookies, tokens...)."""
    return {k: v for k, v in headers.items() if k.lower() not in _OWN_HEADERS}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = 443 if parts.scheme in ("https", "wss") else 80
    try:
        port = parts.port or default
    except ValueError:
        port = None
    return parts.scheme, (parts.hostname or ""), port


async def _close(context: BrowserContext) -> bool:
    """Close the page's context; False when the browser did not answer."""
    with contextlib.suppress(PlaywrightError):  # the browser crashed under it
        try:
            async with asyncio.timeout(chromium.CLOSE_TIMEOUT_SECONDS):
                await context.close()
        except TimeoutError:
            return False
    return True


class _Visit:
    """The steps of one page in one context."""

    def __init__(
        self,
        context: BrowserContext,
        job: PageJob,
        headers: Mapping[str, str],
        proxy: GuardProxy,
    ) -> None:
        self.context = context
        self.job = job
        self.proxy = proxy
        self.own = own_headers(headers)
        self.origin = _origin(job.url)
        self.outputs = ActionOutputs()
        # The main frame's navigations, the status of each that answered,
        # and the answers in order (the page ends on the last one that was
        # not a download).
        self.navigations: list[str] = []
        self.documents: dict[str, int] = {}
        self.answers: list[Response] = []
        # Navigations that turned into downloads (cancelled: the page stays).
        self.downloads: set[str] = set()
        self.started = time.monotonic()
        self.budget = budget_seconds(job)
        self.crashes: list[float] = []
        self.traffic = page_actions.Traffic()
        self.deadline: asyncio.Timeout | None = None

    def remaining_ms(self) -> float:
        return max((self.budget - (time.monotonic() - self.started)) * 1000, 0)

    async def run(self) -> BrowserResult:
        await self.context.route("**/*", self._guard)
        await self.context.route_web_socket(lambda _url: True, self._guard_socket)
        page = await self.context.new_page()
        self.traffic.watch(page)
        page.on("request", lambda request: self._note_navigation(page, request))
        page.on("response", lambda response: self._note_document(page, response))
        page.on("crash", lambda _page: self.crashes.append(time.monotonic()))
        page.on("download", lambda download: self.downloads.add(download.url))
        try:
            async with asyncio.timeout(self.budget) as self.deadline:
                return await self._visit(page)
        except TimeoutError:
            raise self._timed_out() from None
        except (ActionFailed, FetchError, PlaywrightError) as exc:
            # Whatever step noticed it, a browser (or tab) that died is said
            # as such, not as the step's failure.
            mine = isinstance(exc, FetchError) and exc.kind != ErrorKind.BROWSER
            if not mine and await self._died(page):
                raise FetchError(ErrorKind.BROWSER, detail=BROWSER_DIED) from None
            if isinstance(exc, ActionFailed):
                raise FetchError(ErrorKind.ACTION, detail=exc.message) from None
            raise

    async def _died(self, page: Page) -> bool:
        """Whether the tab or the browser is dead (the news of a crash may
        come after the error it caused: a dead tab cannot run a script)."""
        if self.crashes or not self.context.browser.is_connected():
            return True
        try:
            async with asyncio.timeout(2):
                await page.evaluate("1")
        except TimeoutError:
            return False
        except PlaywrightError:
            return True
        return bool(self.crashes)

    async def _visit(self, page: Page) -> BrowserResult:
        response = await self._navigate(page)
        await self._settle(page)
        wait_for = self.job.options.get("waitFor")
        if isinstance(wait_for, int) and not isinstance(wait_for, bool) and wait_for:
            await page.wait_for_timeout(wait_for)
        steps = self.job.options.get("actions")
        if isinstance(steps, list) and steps:
            # The content may be what the actions bring (a "Show prices"
            # click, a consent button outside the app's root): the root is
            # waited for once they are done, each of them waiting for its
            # own element.
            await page_actions.perform(
                page, steps, self.outputs, self.remaining_ms, self.traffic
            )
        await self._wait_for_content(page)
        shot_options = screenshot_format(self.job.options)
        shot = None
        if shot_options is not None:
            shot = await page_actions.screenshot(page, shot_options)
        self._check_where_it_ended(page)
        result = await self._result(page, response, self._ended_on(response), shot)
        if self.proxy.too_large:
            limit = human_size(self.proxy.max_bytes)
            raise FetchError(ErrorKind.TOO_LARGE, detail=limit)
        return result

    # --- Loading ------------------------------------------------------------------

    async def _navigate(self, page: Page) -> Response:
        try:
            response = await page.goto(
                self.job.url,
                wait_until="domcontentloaded",
                timeout=self.remaining_ms() or 1,
            )
        except PlaywrightTimeout:
            raise self._timed_out() from None
        except PlaywrightError as exc:
            raise self._navigation_error(exc) from None
        if response is None:
            raise FetchError(ErrorKind.BROWSER, detail="The browser showed no page.")
        refusal = self.proxy.refusal_for(*_origin(response.url)[1:])
        if response.status == 502 and refusal is not None:
            raise refusal  # the proxy's answer, not the site's
        return response

    async def _settle(self, page: Page) -> None:
        # The load event waits for every image and frame, and one that never
        # answers (a tracking pixel, say) would hold the page past its time:
        # its own share of the time (what its waits and the capture do not
        # need) is all it gets, and the page is captured as it is.
        share = self.remaining_ms() - declared_wait_ms(self.job.options) - CAPTURE_MS
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_load_state("load", timeout=max(share, 1))
        # A page that keeps polling is captured as it is.
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_load_state(
                "networkidle", timeout=min(SETTLE_MS, self.remaining_ms()) or 1
            )

    async def _wait_for_content(self, page: Page) -> None:
        """An app whose root is still empty is waited for, as long as the
        page's time allows; captured empty, it would read as the page's
        whole content removed (and added back at the next check)."""
        share = self.remaining_ms() - CAPTURE_MS
        timeout = max(min(CONTENT_WAIT_MS, share), 1)
        known = [sorted(detect.APP_ROOT_IDS), list(detect.APP_ROOT_TAGS)]
        arg = [*known, detect.LITTLE_TEXT]
        try:
            if await page.evaluate(_FILLED, arg):
                return  # most pages: no time spent (it may be all used up)
            await page.wait_for_function(_FILLED, arg=arg, timeout=timeout, polling=100)
        except PlaywrightTimeout:
            root = None
            with contextlib.suppress(PlaywrightError):
                root = detect.empty_app_root((await page.content()).encode(), page.url)
            detail = (
                f"The page's scripts left it empty ({root or 'its app root'} still "
                f"had nothing in it after {timeout / 1000:g} s), so there was "
                "nothing to compare; its last content is kept."
            )
            raise FetchError(ErrorKind.EMPTY, detail=detail) from None
        except PlaywrightError:
            # The page moved on under the question (a script navigated it):
            # what it ends on is judged by the steps after this one.
            return

    def _note_navigation(self, page: Page, request: Request) -> None:
        if request.is_navigation_request() and request.frame == page.main_frame:
            self.navigations.append(request.url)
            if len(self.navigations) > SCRIPT_REDIRECTS and self.deadline:
                # Its time ends now: _timed_out says it is a redirect loop.
                self.deadline.reschedule(asyncio.get_running_loop().time())

    def _note_document(self, page: Page, response: Response) -> None:
        request = response.request
        if request.is_navigation_request() and request.frame == page.main_frame:
            self.documents[request.url] = response.status
            self.answers.append(response)

    def _navigation_error(self, exc: PlaywrightError) -> FetchError:
        for url in reversed(self.navigations or [self.job.url]):
            refusal = self.proxy.refusal_for(*_origin(url)[1:])
            if refusal is not None:
                return refusal
        message = exc.message or str(exc)
        if "Download is starting" in message:
            detail = (
                "The address is a file to download (a PDF, say), which the "
                "browser does not show; check it without browser options."
            )
            return FetchError(ErrorKind.BROWSER, detail=detail)
        host = self.job.host
        for code, kind in _NET_ERRORS.items():
            if code in message:
                if kind == ErrorKind.TOO_MANY_REDIRECTS:
                    return FetchError(kind, detail="20")
                return FetchError(kind, host=host, detail="")
        if "ERR_CERT" in message or "ERR_SSL" in message:
            reason = message.split("net::", 1)[-1].split()[0]
            return FetchError(ErrorKind.TLS, host=host, detail=reason)
        detail = f"The browser could not load the page: {page_actions.reason_of(exc)}"
        return FetchError(ErrorKind.BROWSER, detail=detail)

    def _check_where_it_ended(self, page: Page) -> None:
        """A page that navigated on (by script, a click, a late redirect) to
        an address that was refused shows nothing of its own: an error."""
        last = self.navigations[-1] if self.navigations else self.job.url
        refusal = self.proxy.refusal_for(*_origin(last)[1:])
        failed = page.url.startswith("chrome-error:")
        if refusal is not None and (failed or self.documents.get(last) == 502):
            raise refusal
        if failed:
            detail = "The page navigated to an address the browser could not load."
            raise FetchError(ErrorKind.BROWSER, detail=detail)

    def _ended_on(self, loaded: Response) -> Response:
        """The answer whose document the page shows at the end: the one
        loaded, or the one a click, a script or a late redirect moved on to
        (its status and headers describe what is captured). A navigation
        that turned into a download left the page where it was."""
        shown = (a for a in reversed(self.answers) if not self._downloaded(a))
        last = next(shown, None)
        if last is None or last.status in range(300, 400):
            return loaded
        return last

    def _downloaded(self, answer: Response) -> bool:
        disposition = answer.headers.get("content-disposition", "")
        attachment = disposition.strip().lower().startswith("attachment")
        return attachment or answer.url in self.downloads

    def _timed_out(self) -> FetchError:
        if len(self.navigations) > SCRIPT_REDIRECTS:
            # Moving on by script again and again (location.href = ...) is
            # a redirect loop, not a slow page.
            return FetchError(
                ErrorKind.TOO_MANY_REDIRECTS, detail=str(len(self.navigations) - 1)
            )
        index = self.outputs.current
        if index is not None:
            steps = self.job.options.get("actions") or []
            action = steps[index] if index < len(steps) else {}
            message = (
                f"Action {index + 1} ({page_actions.label(action)}) failed: the "
                f"page's time ({self.budget:g} s) ran out"
            )
            return FetchError(ErrorKind.ACTION, detail=message)
        waited = f"{self.budget:g} s in the browser"
        holding = self.traffic.holding()
        if holding is not None:
            waited += f"; the page was still waiting for {holding[:200]}"
        return FetchError(ErrorKind.TIMEOUT, host=self.job.host, detail=waited)

    # --- Guards (the second layer; the proxy is the first) --------------------------

    async def _guard(self, route: Route, request: Request) -> None:
        error = await _refusal(request.url)
        if error is not None:
            key = refusal_key(*_origin(request.url)[1:])
            self.proxy.refusals.setdefault(key, error)
            await route.abort("blockedbyclient")
            return
        if self.own and _origin(request.url) == self.origin:
            merged = {**await request.all_headers(), **self.own}
            await route.continue_(headers=merged)
            return
        await route.continue_()

    async def _guard_socket(self, socket: WebSocketRoute) -> None:
        error = await _refusal(socket.url)
        if error is not None:
            key = refusal_key(*_origin(socket.url)[1:])
            self.proxy.refusals.setdefault(key, error)
            await socket.close(code=1008, reason="Blocked")
            return
        socket.connect_to_server()

    # --- The result -----------------------------------------------------------------

    async def _result(
        self, page: Page, response: Response, document: Response, shot: Shot | None
    ) -> BrowserResult:
        headers = httpx.Headers(await document.all_headers())
        for name in ("content-encoding", "content-length", "transfer-encoding"):
            headers.pop(name, None)  # the body below is decoded, and ours
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        acted = bool(self.job.options.get("actions"))
        plain_would_do = False
        if media_type in _HTML_TYPES or not media_type or acted:
            plain_would_do = await self._plain_would_do(document)
            content = (await page.content()).encode()
            headers["content-type"] = "text/html; charset=utf-8"
        else:
            content = await document.body()  # JSON, text, XML: as served
        redirects, hop = [], response.request.redirected_from
        while hop is not None:
            redirects.insert(0, hop.url)
            hop = hop.redirected_from
        return BrowserResult(
            url=self.job.url,
            final_url=page.url,
            status_code=document.status,
            headers=headers,
            content=content,
            redirects=redirects[1:] + [response.url] if redirects else [],
            elapsed_ms=int((time.monotonic() - self.started) * 1000),
            screenshot=shot,
            actions=self.outputs,
            refused=self.proxy.refused,
            plain_would_do=plain_would_do,
        )

    async def _plain_would_do(self, response: Response) -> bool:
        """For a page opened in the browser only because an earlier check
        found it built by scripts: whether the page as served, before its
        scripts ran, now has its content, so a plain fetch would see it."""
        if self.job.browser != Via.REMEMBERED:
            return False
        try:
            served = await response.body()
        except PlaywrightError:
            return False  # not kept (the page went elsewhere): ask next time
        content_type = await response.header_value("content-type") or "text/html"
        return detect.script_built(served, content_type, url=response.url) is None


async def _refusal(url: str) -> FetchError | None:
    """Why a request must not leave the page, judged without DNS: a scheme
    other than http(s), or an IP literal the address policy forbids."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss"):
        detail = f"Only http:// and https:// requests are allowed ({parts.scheme}:)"
        return FetchError(ErrorKind.INVALID_URL, detail=detail)
    host = parts.hostname or ""
    if ip_literal(host) is None:
        return None  # a name: the proxy resolves and judges it
    try:
        await vetted_addresses(system_resolver, host, 0, None)
    except FetchError as exc:
        return exc
    return None


async def fetch_page(
    job: PageJob, headers: Mapping[str, str], resolver: Resolver | None
) -> BrowserResult:
    """The page rendered by this process's browser; raises FetchError.
    Cancelling the caller cancels the page on the browser's loop."""
    if not available():
        raise FetchError(ErrorKind.BROWSER, detail=unavailable_message())
    service = chromium.service()
    work = service.submit(_in_browser(service, job, headers, resolver))
    return await asyncio.wrap_future(work)


async def _in_browser(
    service: chromium.Chromium,
    job: PageJob,
    headers: Mapping[str, str],
    resolver: Resolver | None,
) -> BrowserResult:
    browser = await service.open()
    try:
        return await render(browser, job, headers, resolver, _user_agent(browser))
    except PlaywrightError as exc:
        # Not the page's doing (those are FetchErrors): mostly the browser
        # or its connection went away under it (the next page starts a new
        # one), else Playwright could not do a step.
        if browser.is_connected():
            detail = f"The browser could not show the page: {reason_of(exc)}"
        else:
            logger.warning("Browser connection lost: %s", reason_of(exc))
            detail = BROWSER_DIED
        raise FetchError(ErrorKind.BROWSER, detail=detail) from None
    finally:
        await service.release(browser)


def _user_agent(browser: Browser) -> str:
    """Chromium's own (without "Headless", which many sites turn away), and
    ours after it, so site owners can tell who is visiting."""
    version = browser.version
    return (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{version} Safari/537.36 {settings.OUTBOUND_USER_AGENT}"
    )
