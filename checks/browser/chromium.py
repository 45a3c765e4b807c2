"""One Chromium per worker process, driven by Playwright's async API.

Playwright's objects belong to the event loop that created them, while the
runner runs one short loop per batch (and Celery's time limits interrupt it).
So the browser lives on a loop of its own, in one thread per process, started
by the first page that needs it -- after Celery's fork, never before it -- and
pages are submitted to it from any loop (`submit`). The browser is started
again after BROWSER_RESTART_AFTER_PAGES pages (a long-lived Chromium grows),
after a crash, and on the next page after it was closed for being idle
BROWSER_IDLE_SECONDS (Playwright's driver is stopped with it). A browser
that stops answering (its page cannot even be closed) is killed.

Chromium's own proxy points at a proxy that refuses everything: only page
contexts, each with its own filtering proxy (checks.browser.proxy), reach
the network. Its resolver is told to resolve nothing, so even a request that
escaped the proxy could not look up a name.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Coroutine
from typing import Any

from django.conf import settings
from playwright.async_api import Browser, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from checks.browser.actions import reason_of
from checks.browser.executable import executable, unavailable_message
from checks.browser.proxy import GuardProxy
from checks.errors import ErrorKind
from checks.fetch import FetchError
from checks.fetch.transport import system_resolver

logger = logging.getLogger(__name__)

LAUNCH_TIMEOUT_MS = 30_000
# How long closing a page's context or a browser may take: longer, and the
# browser has stopped answering (hung, or frozen by the system).
CLOSE_TIMEOUT_SECONDS = 10
# Always on: what a monitoring browser never needs, and every way Chromium
# has of reaching the network (or the disk) by itself.
LAUNCH_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-sync",
    "--disable-breakpad",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--dns-prefetch-disable",
    "--disable-quic",
    "--no-first-run",
    "--no-pings",
    "--metrics-recording-only",
    "--mute-audio",
    # WebRTC may otherwise send UDP straight to any address a page names.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    # Autofill asks Google's server about every form a page shows (and votes
    # on submitted ones) through the page's own proxy, so the form's
    # signatures would leave with the monitored page's traffic. Its feature
    # switch cannot be used: Chromium keeps only the last --disable-features,
    # and Playwright passes its own. Pointed at a URL with nowhere to go, it
    # fails inside Chromium without a connection.
    "--autofill-server-url=data:,",
    # Two more services ask for their servers as the browser starts, even
    # with --disable-background-networking and --disable-component-update:
    # the component updater (update.googleapis.com), pointed like autofill
    # at a URL with nowhere to go, and the profile's Google account list
    # (accounts.google.com/ListAccounts). The account service accepts only
    # an http(s) address, so it gets one on port 1, which Chromium refuses
    # as unsafe before any connection or proxy.
    "--component-updater=url-source=data:,",
    "--gaia-url=http://accounts.invalid:1/",
    # Names are resolved by our proxy only; Chromium's resolver answers none.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)


def launch_args(memory_mb: int) -> list[str]:
    args = [*LAUNCH_ARGS, f"--js-flags=--max-old-space-size={memory_mb}"]
    if os.geteuid() == 0:
        # Chromium refuses to start as root with its sandbox on.
        logger.warning(
            "Browser runs as root, so without Chromium's sandbox: run workers "
            "as an unprivileged user"
        )
        args.append("--no-sandbox")
    return args


class Chromium:
    """The process's browser, on its own event loop thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run, name="pagewatch-browser", daemon=True
        )
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._deny: GuardProxy | None = None
        self._starting: asyncio.Lock | None = None
        self._gate: asyncio.Semaphore | None = None
        self._pages_started = 0
        # Pages open per browser: a restarted browser closes after its last.
        self._open_pages: dict[Browser, int] = {}
        self._idle: asyncio.TimerHandle | None = None
        self._putting_down: set[asyncio.Future[None]] = set()
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit[T](self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `work` on the browser's loop; cancelling the future cancels it."""
        return asyncio.run_coroutine_threadsafe(work, self.loop)

    # --- Pages (on the browser's loop) --------------------------------------------

    async def open(self) -> Browser:
        """A browser for one more page, waiting for a free slot
        (BROWSER_CONCURRENCY); pair with `release`."""
        if self._gate is None:
            self._gate = asyncio.Semaphore(int(settings.BROWSER_CONCURRENCY))
        await self._gate.acquire()
        try:
            browser = await self._current()
        except BaseException:
            self._gate.release()
            raise
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        self._pages_started += 1
        self._open_pages[browser] = self._open_pages.get(browser, 0) + 1
        return browser

    async def release(self, browser: Browser) -> None:
        assert self._gate is not None
        self._gate.release()
        self._open_pages[browser] -= 1
        if not self._open_pages[browser]:
            del self._open_pages[browser]
        restart = int(settings.BROWSER_RESTART_AFTER_PAGES)
        if browser is self._browser and self._pages_started >= restart:
            self._browser = None  # new pages get a new browser
        if browser is not self._browser and browser not in self._open_pages:
            await _close_quietly(browser)  # restarted or crashed: its last page
        if not self._open_pages and self._browser is not None:
            idle = float(settings.BROWSER_IDLE_SECONDS)
            self._idle = self.loop.call_later(
                idle, lambda: asyncio.ensure_future(self.stop())
            )

    def _lock(self) -> asyncio.Lock:
        # Held while the browser (or Playwright's driver) starts or stops, so
        # a page never gets a browser that is being shut down.
        if self._starting is None:
            self._starting = asyncio.Lock()
        return self._starting

    async def _current(self) -> Browser:
        async with self._lock():
            if self._browser is None or not self._browser.is_connected():
                self._browser = await self._launch()
            return self._browser

    async def _launch(self) -> Browser:
        path = executable()
        if path is None:
            raise FetchError(ErrorKind.BROWSER, detail=unavailable_message())
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        if self._deny is None:
            self._deny = GuardProxy(system_resolver, max_bytes=0, refuse_all=True)
            await self._deny.start()
        self._pages_started = 0
        try:
            browser = await self._playwright.chromium.launch(
                executable_path=path,
                headless=True,
                args=launch_args(int(settings.BROWSER_MEMORY_MB)),
                proxy={"server": self._deny.url, "bypass": "<-loopback>"},
                timeout=LAUNCH_TIMEOUT_MS,
                handle_sigint=False,
                handle_sigterm=False,
                handle_sighup=False,
            )
        except PlaywrightError as exc:
            logger.error("Chromium (%s) did not start: %s", path, exc.message)
            detail = (
                f"The browser ({path}) did not start: {reason_of(exc).rstrip('.')}. "
                "BROWSER_EXECUTABLE must name a Chromium (Debian's chromium "
                "package installs /usr/bin/chromium)."
            )
            raise FetchError(ErrorKind.BROWSER, detail=detail) from None
        logger.info("Started Chromium %s (%s)", browser.version, path)
        return browser

    async def stop(self) -> None:
        """Close the browser and Playwright's driver (both start again on the
        next page)."""
        async with self._lock():
            if self._open_pages:
                return  # a page arrived meanwhile
            browser, self._browser = self._browser, None
            if browser is not None:
                await _close_quietly(browser)
            # The driver is a Node process of its own (about 120 MB) that
            # outlives its browsers: an idle worker keeps neither.
            await self._stop_driver()

    async def discard(self, browser: Browser) -> None:
        """A browser that stopped answering: it cannot even be closed. New
        pages get a new browser and driver at once, while the old driver is
        stopped in the background: Playwright then kills the browsers it
        started (within 30 s, at once when one of them is already closing)."""
        async with self._lock():
            logger.error("Chromium stopped answering: killing it")
            if browser is self._browser:
                self._browser = None
            playwright, self._playwright = self._playwright, None
        if playwright is not None:
            task = asyncio.ensure_future(_put_down(browser, playwright))
            self._putting_down.add(task)
            task.add_done_callback(self._putting_down.discard)

    async def _stop_driver(self) -> None:
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            with contextlib.suppress(Exception):  # timed out, or gone already
                async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
                    await playwright.stop()

    @property
    def launched(self) -> Browser | None:
        """The browser new pages get, when one runs (tests watch restarts)."""
        return self._browser


async def _put_down(browser: Browser, playwright: Playwright) -> None:
    closing = asyncio.ensure_future(_close_quietly(browser))
    await asyncio.sleep(0)  # its request reaches the driver before it stops
    with contextlib.suppress(Exception):  # timed out, or gone already
        async with asyncio.timeout(60):
            await playwright.stop()
    closing.cancel()


async def _close_quietly(browser: Browser) -> None:
    # Crashed already, or killed with its driver (Chromium.discard).
    with contextlib.suppress(PlaywrightError, TimeoutError):
        async with asyncio.timeout(CLOSE_TIMEOUT_SECONDS):
            await browser.close()


_service: Chromium | None = None
_service_lock = threading.Lock()


def service() -> Chromium:
    """This process's browser thread, started on first use."""
    global _service
    with _service_lock:
        if _service is None:
            _service = Chromium()
        return _service


def _forget_after_fork() -> None:
    # A forked child has none of its parent's threads: it starts its own.
    global _service, _service_lock
    _service, _service_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
