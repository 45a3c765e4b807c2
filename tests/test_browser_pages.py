"""Pages fetched in real Chromium (Debian's /usr/bin/chromium) by the check
runner: script-built pages detected and remembered, waitFor, every action,
screenshots, and the browser's limits. SSRF through the browser is in
tests/test_browser_safety.py.

Without Chromium these tests skip with a notice (CI=true: they fail)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from checks.browser import actions as page_actions
from checks.browser import chromium
from checks.models import Capture, CheckBatch, PageResult, PageState
from monitors.models import Monitor
from tests.test_runner import make_monitor, page_of, run_check, state_of

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")

APP = """<!doctype html><html><head><title>Shop</title></head><body>
<div id="root"></div>
<script>
  document.getElementById("root").innerHTML =
    "<h1>Plans</h1><p>Starter costs $19 a month.</p>";
</script></body></html>"""


@pytest.fixture(autouse=True)
def chromium_present(private_targets_allowed) -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: install Debian's chromium to run browser tests"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: not skipping)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def private_targets_allowed(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def from_browser(request: Any) -> bool:
    return "Chrome/" in (request.header("User-Agent") or "")


# --- Script-built pages -----------------------------------------------------------


def test_a_page_built_by_scripts_is_detected_rendered_and_remembered(team, site):
    url = site.page("/", APP)
    monitor = make_monitor(team, [url])

    first = page_of(run_check(monitor), url)

    assert first.status == PageResult.Status.NEW
    assert first.metadata["fetchedWith"] == "browser"
    assert "empty app root" in first.metadata["fetchedWithReason"]
    assert first.metadata["title"] == "Shop"
    assert "Starter costs $19" in first.current_snapshot.text
    assert state_of(monitor, url).fetcher == "browser"
    plain, rendered = site.requests_to("/")
    assert not from_browser(plain) and from_browser(rendered)

    second = page_of(run_check(monitor), url)

    assert second.status == PageResult.Status.SAME
    assert second.metadata["fetchedWithReason"] == (
        "An earlier check found this page is built by scripts."
    )
    assert [from_browser(r) for r in site.requests_to("/")[2:]] == [True]
    assert CheckBatch.objects.filter(check_run=second.check_run).get().uses_browser


def test_a_page_with_its_content_in_the_html_stays_on_plain_http(team, site):
    url = site.html("/", "Docs", "<p>" + "Plenty of text. " * 30 + "</p>")
    monitor = make_monitor(team, [url])

    page = page_of(run_check(monitor), url)

    assert page.metadata["fetchedWith"] == "http"
    assert "fetchedWithReason" not in page.metadata
    assert state_of(monitor, url).fetcher == "http"
    assert not any(from_browser(r) for r in site.requests_to("/"))


def test_without_a_browser_a_script_built_page_is_kept_as_fetched_and_says_why(
    team, site, settings
):
    settings.BROWSER_EXECUTABLE = "/nowhere/chromium"
    url = site.page("/", APP)
    monitor = make_monitor(team, [url])

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.NEW
    assert page.metadata["fetchedWith"] == "http"
    assert "no browser is available" in page.metadata["fetchedWithReason"]
    assert state_of(monitor, url).fetcher == ""  # looked at again next time


def test_a_remembered_page_whose_html_now_has_its_content_goes_back_to_plain_http(
    team, site
):
    url = site.page("/", APP)
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/", "Shop", "<p>" + "Starter costs $19 a month. " * 20 + "</p>")

    second = page_of(run_check(monitor), url)

    assert second.metadata["fetchedWith"] == "browser"
    assert second.metadata["fetchedWithReason"].endswith(
        "Its content is now there without scripts: the next check fetches it plainly."
    )
    assert state_of(monitor, url).fetcher == "http"

    third = page_of(run_check(monitor), url)

    assert third.status == PageResult.Status.SAME
    assert third.metadata["fetchedWith"] == "http"
    assert not from_browser(site.requests_to("/")[-1])


def test_a_remembered_page_still_built_by_scripts_stays_with_the_browser(team, site):
    url = site.page("/", APP)
    monitor = make_monitor(team, [url])
    run_check(monitor)

    second = page_of(run_check(monitor), url)

    assert "fetches it plainly" not in second.metadata["fetchedWithReason"]
    assert state_of(monitor, url).fetcher == "browser"


def test_a_monitor_set_to_plain_http_never_opens_the_browser(team, site):
    url = site.page("/", APP)
    monitor = make_monitor(team, [url])
    Monitor.objects.filter(pk=monitor.pk).update(fetch_with="http")

    page = page_of(run_check(monitor), url)

    assert page.metadata["fetchedWith"] == "http"
    assert "fetchedWithReason" not in page.metadata
    assert "Starter costs" not in page.current_snapshot.text
    assert not any(from_browser(r) for r in site.requests_to("/"))
    assert state_of(monitor, url).fetcher == ""  # auto would look again


def test_a_monitor_set_to_the_browser_opens_every_page_in_it(team, site):
    url = site.html("/", "Docs", "<p>" + "Plenty of text. " * 30 + "</p>")
    monitor = make_monitor(team, [url])
    Monitor.objects.filter(pk=monitor.pk).update(fetch_with="browser")

    check = run_check(monitor)
    page = page_of(check, url)

    assert page.metadata["fetchedWith"] == "browser"
    assert page.metadata["fetchedWithReason"] == (
        "Its monitor is set to always use a browser."
    )
    assert [from_browser(r) for r in site.requests_to("/")] == [True]
    assert CheckBatch.objects.filter(check_run=check).get().uses_browser
    assert state_of(monitor, url).fetcher == ""


def test_the_browser_follows_a_refresh_only_page_once_by_itself(team, site):
    # The plain fetch follows such a page (checks.fetch.refresh); the browser
    # is handed the monitor's URL and Chromium follows it, nothing else.
    old = site.page(
        "/old",
        '<html><head><meta http-equiv="refresh" content="0; url=/docs"></head>'
        "<body>Redirecting…</body></html>",
    )
    docs = site.html("/docs", "Docs", "<p>" + "Plenty of text. " * 30 + "</p>")
    monitor = make_monitor(team, [old])
    Monitor.objects.filter(pk=monitor.pk).update(fetch_with="browser")

    page = page_of(run_check(monitor), old)

    assert page.metadata["fetchedWith"] == "browser"
    assert page.metadata["url"] == docs
    assert "Plenty of text." in page.current_snapshot.text
    assert [from_browser(r) for r in site.requests_to("/old")] == [True]
    assert [from_browser(r) for r in site.requests_to("/docs")] == [True]


def test_a_page_with_an_image_that_never_answers_is_captured_within_its_time(
    team, site, settings
):
    settings.FETCH_TIMEOUT_SECONDS = 6
    answer = threading.Event()
    site.handle("/pixel.gif", lambda request: (answer.wait(30), (204, {}, b""))[1])
    body = '<h1>Plans</h1><p>Starter costs $19.</p><img src="/pixel.gif">'
    url = site.html("/p", "P", body)
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    try:
        page = page_of(run_check(monitor), url)
    finally:
        answer.set()

    assert page.status == PageResult.Status.NEW
    assert "Starter costs $19." in page.current_snapshot.text
    assert page.metadata["fetchedWith"] == "browser"


def test_a_page_that_keeps_moving_on_by_script_is_a_redirect_loop_not_a_slow_page(
    team, site, settings
):
    # Time enough for its hops on a busy machine: the loop is told by how
    # many times the page moved on, not by how many fit in the time.
    settings.FETCH_TIMEOUT_SECONDS = 120
    url = site.page(
        "/loop",
        "<html><body><p>Moving on</p><script>"
        "location.href = location.pathname + '?n=' + Math.random()"
        "</script></body></html>",
    )
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "too_many_redirects"
    assert page.error.startswith("Stopped after ")
    assert page.error.startswith("Stopped after ")
    # Stopped once it had moved on more than 20 times, not at its time's end
    # (two minutes of looping would have asked for it hundreds of times).
    assert 20 <= len(site.requests_to("/loop")) < 40


def test_a_monitor_set_to_the_browser_without_one_reports_its_pages_as_errors(
    team, site, settings
):
    settings.BROWSER_EXECUTABLE = "/nowhere/chromium"
    url = site.html("/", "Docs", "<p>" + "Plenty of text. " * 30 + "</p>")
    monitor = make_monitor(team, [url])
    Monitor.objects.filter(pk=monitor.pk).update(fetch_with="browser")

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.ERROR
    assert "BROWSER_EXECUTABLE (/nowhere/chromium) was not found" in page.error
    assert site.requests_to("/") == []


@pytest.mark.parametrize(
    ("executable", "words"),
    [
        ("/bin/true", "The browser (/bin/true) did not start: Target page"),
        ("{tmp}/chromium.txt", "chromium.txt) is not a program this server can run"),
    ],
    ids=["a-program-that-is-not-chromium", "a-file-that-is-not-a-program"],
)
def test_a_browser_setting_naming_something_else_says_what_to_set(
    team, site, settings, tmp_path, executable, words
):
    (tmp_path / "chromium.txt").write_text("not a program")
    service = chromium.service()
    service.submit(service.stop()).result(30)  # the setting is read at launch
    settings.BROWSER_EXECUTABLE = executable.format(tmp=tmp_path)
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "browser"
    assert words in page.error
    assert "BROWSER_EXECUTABLE" in page.error
    assert "BrowserType" not in page.error


# --- waitFor and actions ----------------------------------------------------------

LATE = """<!doctype html><html><head><title>Late</title></head><body>
<main><p>Always here, with enough words to count as a page of its own.</p></main>
<script>
  setTimeout(() => document.querySelector("main").insertAdjacentHTML(
    "beforeend", "<p>Arrived late</p>"), 1500);
</script></body></html>"""


def test_wait_for_lets_late_content_arrive_before_the_capture(team, site):
    url = site.page("/late", LATE)
    waited = make_monitor(team, [url], scrape_options={"waitFor": 2500})
    hurried = make_monitor(team, [url], scrape_options={"mobile": True})

    waited_page = page_of(run_check(waited), url)
    hurried_page = page_of(run_check(hurried), url)

    assert "Arrived late" in waited_page.current_snapshot.text
    assert "waitFor" in waited_page.metadata["fetchedWithReason"]
    assert "notApplied" not in waited_page.metadata
    assert "Arrived late" not in hurried_page.current_snapshot.text
    assert "iPhone" in site.requests_to("/late")[-1].header("User-Agent")


PANEL = """<!doctype html><html><head><title>Panel</title></head><body>
<main>
  <p>A panel of controls, with text enough to stand on its own two feet.</p>
  <button id="more">More</button>
  <button class="tab">One</button><button class="tab">Two</button>
  <input id="q"> <div id="typed"></div>
  <div id="log"></div>
  <div style="height: 3000px"></div>
</main>
<script>
  const log = (t) => document.getElementById("log").insertAdjacentHTML(
    "beforeend", "<p>" + t + "</p>");
  document.getElementById("more").onclick = () => log("More details shown");
  document.querySelectorAll(".tab").forEach(
    (b) => b.onclick = () => log("Tab " + b.textContent + " opened"));
  document.getElementById("q").onkeydown = (e) => {
    if (e.key === "Enter") log("Searched for " + e.target.value);
  };
  addEventListener("scroll", () => log("Scrolled"), {once: true});
  setTimeout(() => log("<span id='late'>Late box</span>"), 600);
</script></body></html>"""


def test_each_action_changes_what_is_captured_and_its_outputs_are_kept(team, site):
    url = site.page("/panel", PANEL)
    actions = [
        {"type": "wait", "selector": "#late"},
        {"type": "click", "selector": "#more"},
        {"type": "click", "selector": ".tab", "all": True},
        {"type": "click", "selector": "#q"},
        {"type": "write", "text": "pagewatch"},
        {"type": "press", "key": "Enter"},
        {"type": "scroll", "direction": "down"},
        {"type": "wait", "milliseconds": 200},
        {"type": "screenshot", "fullPage": False},
        {"type": "scrape"},
        {"type": "executeJavascript", "script": "document.title + '!'"},
        {"type": "pdf", "format": "A4"},
    ]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    text = page.current_snapshot.text
    for words in (
        "Late box", "More details shown", "Tab One opened", "Tab Two opened",
        "Searched for pagewatch", "Scrolled",
    ):  # fmt: skip
        assert words in text
    done = page.metadata["actions"]
    assert done["javascriptReturns"] == [{"type": "string", "value": "Panel!"}]
    assert done["scrapes"][0]["url"] == url
    assert "Searched for pagewatch" in done["scrapes"][0]["html"]
    [shot], [pdf] = done["screenshots"], done["pdfs"]
    stored = {c.content_hash: c for c in page.captures.all()}
    assert stored[shot].media_type == "image/png"
    assert bytes(stored[shot].data).startswith(b"\x89PNG")
    assert bytes(stored[pdf].data).startswith(b"%PDF")


def test_a_click_that_leads_to_a_missing_page_reports_that_pages_status(team, site):
    # What is captured is the page the actions ended on, so its status is too
    # (it was the first page's 200, beside the missing page's words).
    url = site.html("/list", "List", '<p>Items</p><a id="on" href="/gone">On</a>')
    site.html("/gone", "Gone", "<p>This item was taken down.</p>", status=404)
    actions = [
        {"type": "click", "selector": "#on"},
        {"type": "wait", "milliseconds": 300},
    ]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    assert page.status_code == 404
    assert page.metadata["statusCode"] == 404
    assert page.metadata["url"].endswith("/gone")


def test_a_failing_action_makes_the_page_an_error_naming_it(team, site, monkeypatch):
    # Long enough for the element that is there on a busy machine.
    monkeypatch.setattr(page_actions, "ELEMENT_TIMEOUT_MS", 3000)
    url = site.page("/panel", PANEL)
    actions = [
        {"type": "click", "selector": "#more"},
        {"type": "click", "selector": "#missing"},
    ]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "action"
    assert page.error == (
        'Action 2 (click "#missing") failed: no visible element matched the '
        "selector within 3 s"
    )


def test_a_script_that_throws_fails_its_action_with_the_scripts_words(team, site):
    url = site.page("/panel", PANEL)
    actions = [{"type": "executeJavascript", "script": "throw new Error('no way')"}]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    assert page.error_kind == "action"
    assert page.error.startswith("Action 1 (executeJavascript) failed: ")
    assert "no way" in page.error


def test_a_script_returning_a_huge_string_keeps_its_beginning_as_a_string(team, site):
    url = site.page("/panel", PANEL)
    script = "'<p>' + 'x'.repeat(200000)"
    actions = [{"type": "executeJavascript", "script": script}]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    [returned] = page.metadata["actions"]["javascriptReturns"]
    assert returned["type"] == "string"
    assert returned["truncated"] is True
    assert returned["value"] == "<p>" + "x" * (page_actions.RETURN_MAX_CHARS - 3)


def test_a_scrape_of_a_huge_page_keeps_its_beginning_and_says_it_was_cut(team, site):
    url = site.html("/long", "Long", "<p>" + "y" * (page_actions.SCRAPE_MAX_CHARS + 10))
    actions = [{"type": "scrape"}, {"type": "executeJavascript", "script": "1 + 1"}]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    [scrape] = page.metadata["actions"]["scrapes"]
    assert scrape["truncated"] is True
    assert len(scrape["html"]) == page_actions.SCRAPE_MAX_CHARS
    assert scrape["html"].startswith("<!DOCTYPE html><html><head><title>Long")
    assert page.metadata["actions"]["javascriptReturns"] == [
        {"type": "number", "value": 2}
    ]


# --- Screenshots ------------------------------------------------------------------


def test_a_screenshot_format_is_stored_once_per_content(team, site):
    url = site.html("/p", "Shot", "<h1>Picture this</h1>")
    options = {"formats": ["markdown", {"type": "screenshot", "quality": 70}]}
    monitor = make_monitor(team, [url], scrape_options=options)

    first = page_of(run_check(monitor), url)
    second = page_of(run_check(monitor), url)

    digest = first.metadata["screenshot"]
    capture = Capture.objects.get(content_hash=digest)
    assert capture.media_type == "image/jpeg"
    assert bytes(capture.data).startswith(b"\xff\xd8")
    assert second.metadata["screenshot"] == digest
    assert Capture.objects.count() == 1
    assert set(capture.pages.all()) == {first, second}
    assert "screenshot" not in state_of(monitor, url).metadata


def test_a_full_page_screenshot_of_an_endless_page_stops_at_its_size_limit(
    team, site, monkeypatch
):
    monkeypatch.setattr(page_actions, "FULL_PAGE_MAX_PX", 4000)
    url = site.html("/tall", "Tall", '<div style="height:12000px">Long</div>')
    options = {"formats": ["markdown", {"type": "screenshot", "fullPage": True}]}
    monitor = make_monitor(team, [url], scrape_options=options)

    page = page_of(run_check(monitor), url)

    png = bytes(Capture.objects.get(content_hash=page.metadata["screenshot"]).data)
    width, height = int.from_bytes(png[16:20]), int.from_bytes(png[20:24])
    assert page.status == PageResult.Status.NEW
    assert (width, height) == (1280, 4000)


# --- The browser's own life -------------------------------------------------------


def test_the_browser_starts_again_after_its_page_allowance(team, site, settings):
    settings.BROWSER_RESTART_AFTER_PAGES = 1
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    run_check(monitor)
    service = chromium.service()
    assert service.launched is None  # retired after its one page

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.SAME
    assert service.launched is None


def test_a_crashed_browser_is_started_again_for_the_next_page(team, site):
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})
    run_check(monitor)
    service = chromium.service()
    before = service.launched
    assert before is not None
    service.submit(before.close()).result(10)  # as if it had died

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.SAME
    assert service.launched is not None and service.launched is not before


def test_a_page_past_the_byte_allowance_is_stopped(team, site, settings):
    settings.BROWSER_MAX_BYTES = 50_000
    site.page("/big.js", "/*" + "x" * 200_000 + "*/", content_type="text/javascript")
    url = site.html("/p", "P", '<p>x</p><script src="/big.js"></script>')
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "too_large"
    assert PageState.objects.filter(monitor=monitor).count() == 0


def browser_processes() -> dict[int, str]:
    """This process's descendants that are Chromium or Playwright's driver."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                state, parent = (
                    (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                )
                if state not in "ZX":  # a zombie is dead, only not yet reaped
                    children.setdefault(int(parent), []).append(int(entry.name))
    found, todo = {}, [os.getpid()]
    while todo:
        for pid in children.get(todo.pop(), []):
            todo.append(pid)
            with contextlib.suppress(OSError):
                name = Path(f"/proc/{pid}/comm").read_text().strip()
                if "chrom" in name or "node" in name:
                    found[pid] = name
    return found


def signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def test_a_browser_that_stops_answering_ends_its_page_and_is_replaced(
    team, site, settings, monkeypatch
):
    settings.FETCH_TIMEOUT_SECONDS = 3
    monkeypatch.setattr(chromium, "CLOSE_TIMEOUT_SECONDS", 2)
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 2000})
    frozen: list[int] = []

    def freeze_the_browser() -> None:
        site.wait_for_requests(1, path="/p", timeout=30)
        frozen.extend(p for p, name in browser_processes().items() if "chrom" in name)
        signal_all(frozen, signal.SIGSTOP)

    freezer = threading.Thread(target=freeze_the_browser, daemon=True)
    freezer.start()
    # Without a way out the check would wait for ever: thaw it late to see.
    thaw = threading.Timer(60, lambda: signal_all(frozen, signal.SIGCONT))
    thaw.start()
    started = time.monotonic()
    try:
        page = page_of(run_check(monitor), url)
    finally:
        thaw.cancel()
        signal_all(frozen, signal.SIGCONT)
    took = time.monotonic() - started

    assert frozen and took < 20
    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "browser"
    assert "stopped responding" in page.error
    again = page_of(run_check(monitor), url)
    assert again.status == PageResult.Status.NEW
    deadline = time.monotonic() + 40
    while set(frozen) & set(browser_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not set(frozen) & set(browser_processes())  # killed, not left behind


@pytest.mark.parametrize("which", ["browser", "tab"])
def test_a_browser_killed_mid_page_ends_the_page_in_plain_words(team, site, which):
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 3000})
    killed: list[int] = []

    def kill() -> None:
        site.wait_for_requests(1, path="/p", timeout=30)
        for pid in browser_processes():
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
                is_tab = b"--type=renderer" in command
                is_browser = b"chrom" in command and b"--type=" not in command
                if is_tab if which == "tab" else is_browser:
                    killed.append(pid)
        signal_all(killed, signal.SIGKILL)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    page = page_of(run_check(monitor), url)
    killer.join(5)

    assert killed
    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "browser"
    assert page.error.startswith("The browser stopped while showing the page")
    again = page_of(run_check(monitor), url)
    assert again.status == PageResult.Status.NEW


def test_an_idle_browser_is_closed_with_playwrights_driver(team, site, settings):
    settings.BROWSER_IDLE_SECONDS = 1
    url = site.html("/p", "P", "<p>x</p>")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    page = page_of(run_check(monitor), url)
    assert page.status == PageResult.Status.NEW
    deadline = time.monotonic() + 20
    while browser_processes() and time.monotonic() < deadline:
        time.sleep(0.2)

    assert browser_processes() == {}
    assert chromium.service().launched is None
    again = page_of(run_check(monitor), url)
    assert again.status == PageResult.Status.SAME
