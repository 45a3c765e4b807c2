"""Pages shaped like today's web, checked again and again in real Chromium:
apps that fetch their content after a pause, pages that load more as they
are scrolled or clicked, pages that turn into downloads. Whatever they do,
a check sees only what really changed, says plainly what went wrong, and
never hangs. (Loading, actions and the browser's limits are in
tests/test_browser_pages.py; its fixtures skip these without Chromium.)"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import pytest

from checks.browser import page as browser_page
from checks.models import PageResult
from tests.test_browser_pages import (  # noqa: F401 (fixtures)
    chromium_present,
    private_targets_allowed,
)
from tests.test_runner import make_monitor, page_of, run_check

pytestmark = pytest.mark.browser

# An app that asks for its content only after a pause (a timer, a consent
# check, a token fetched first), so its network is quiet before it starts.
LATE_APP = """<!doctype html><html><head><title>Shop</title></head><body>
<div id="root"></div>
<script>
  setTimeout(() => fetch("/api/plans").then((r) => r.json()).then((plans) => {
    document.getElementById("root").innerHTML =
      "<main><h1>Plans</h1><p>" + plans.starter + "</p></main>";
  }), 1200);
</script></body></html>"""


def plans(text: str) -> Any:
    body = json.dumps({"starter": text}).encode()
    return lambda request: (200, {"Content-Type": "application/json"}, body)


def test_an_app_whose_content_arrives_after_a_pause_is_captured_with_it(team, site):
    site.handle("/api/plans", plans("Starter costs $19 a month."))
    url = site.page("/", LATE_APP)
    monitor = make_monitor(team, [url])

    first = page_of(run_check(monitor), url)
    second = page_of(run_check(monitor), url)

    assert first.metadata["fetchedWith"] == "browser"
    assert "Starter costs $19 a month." in first.current_snapshot.text
    assert second.status == PageResult.Status.SAME


def test_an_app_that_leaves_its_root_empty_is_an_error_and_keeps_its_content(
    team, site, monkeypatch
):
    monkeypatch.setattr(browser_page, "CONTENT_WAIT_MS", 2500)
    site.handle("/api/plans", plans("Starter costs $19 a month."))
    url = site.page("/", LATE_APP)
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})
    run_check(monitor)
    site.handle("/api/plans", lambda request: (503, {}, b"busy"))

    broken = page_of(run_check(monitor), url)

    assert broken.status == PageResult.Status.ERROR
    assert broken.error_kind == "empty"
    assert broken.error == (
        'The page\'s scripts left it empty (<div id="root"> still had nothing in '
        "it after 2.5 s), so there was nothing to compare; its last content is kept."
    )
    site.handle("/api/plans", plans("Starter costs $19 a month."))
    again = page_of(run_check(monitor), url)
    assert again.status == PageResult.Status.SAME
    assert "Starter costs $19 a month." in again.current_snapshot.text


# An app that shows its content only once a button outside its root is
# clicked ("Show prices", a consent banner).
GATED_APP = """<!doctype html><html><head><title>Shop</title></head><body>
<button id="show">Show prices</button>
<div id="root"></div>
<script>
  document.getElementById("show").onclick = () => {
    document.getElementById("root").innerHTML =
      "<main><h1>Plans</h1><p>Starter costs $19 a month.</p></main>";
  };
</script></body></html>"""


def test_an_app_filled_by_a_click_action_is_captured_with_its_content(
    team, site, monkeypatch
):
    monkeypatch.setattr(browser_page, "CONTENT_WAIT_MS", 1500)
    url = site.page("/", GATED_APP)
    actions = [{"type": "click", "selector": "#show"}]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    first = page_of(run_check(monitor), url)
    second = page_of(run_check(monitor), url)

    assert first.status == PageResult.Status.NEW, first.error
    assert "Starter costs $19 a month." in first.current_snapshot.text
    assert second.status == PageResult.Status.SAME


def test_a_small_page_built_by_scripts_is_captured_without_waiting(team, site):
    # Little text, but no app root waiting for content: nothing to wait for.
    url = site.page(
        "/status",
        "<!doctype html><html><head><title>Status</title></head><body>"
        "<p id=s></p><script>document.getElementById('s').textContent ="
        " 'All systems go'</script></body></html>",
    )
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.NEW
    assert page.current_snapshot.text.strip() == "All systems go"


def test_a_page_that_moves_on_to_a_download_is_captured_as_it_stayed(
    team, site, settings
):
    # Chromium does not show a download: the page stays where it was.
    settings.FETCH_TIMEOUT_SECONDS = 8
    site.page(
        "/price-list.zip",
        b"PK\x03\x04" + b"\x00" * 64,
        content_type="application/zip",
        headers={"Content-Disposition": 'attachment; filename="price-list.zip"'},
    )
    url = site.html(
        "/prices",
        "Prices",
        "<p>Your download starts in a moment. Starter costs $19.</p>"
        "<script>setTimeout(() => location.href = '/price-list.zip', 50)</script>",
    )
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 500})

    page = page_of(run_check(monitor), url)

    assert site.requests_to("/price-list.zip")
    assert page.status == PageResult.Status.NEW
    assert page.status_code == 200
    assert page.metadata["url"] == url
    assert "Starter costs $19." in page.current_snapshot.text


# A "Load more" button and a section that loads when scrolled into view, each
# fetching its content from an API that takes a moment to answer.
MORE = """<!doctype html><html><head><title>Plans</title></head><body><main>
<h1>Plans</h1><p>Starter costs $19 a month, with every feature a small team needs.</p>
<div id="more-plans"></div><button id="more">Show more plans</button>
<div style="height: 2400px"></div>
<section id="reviews"><p>Loading reviews…</p></section>
</main><script>
  const fill = (id, path) => fetch(path).then((r) => r.text()).then((text) => {
    document.getElementById(id).innerHTML = "<p>" + text + "</p>";
  });
  document.getElementById("more").onclick = () => fill("more-plans", "/api/more");
  new IntersectionObserver((seen, watcher) => {
    if (!seen[0].isIntersecting) return;
    watcher.disconnect();
    fill("reviews", "/api/reviews");
  }).observe(document.getElementById("reviews"));
</script></body></html>"""


def slow_text(text: str) -> Any:
    def answer(request: Any) -> Any:
        time.sleep(0.7)  # the API's own pace, longer than a glance
        return 200, {"Content-Type": "text/plain"}, text.encode()

    return answer


@pytest.mark.parametrize(
    ("action", "words"),
    [
        ({"type": "click", "selector": "#more"}, "Pro costs $49 a month."),
        ({"type": "scroll", "direction": "down"}, "Rated 4.8 by 120 teams."),
        ({"type": "press", "key": "End"}, "Rated 4.8 by 120 teams."),
    ],
    ids=["click", "scroll", "press"],
)
def test_what_an_action_sets_loading_is_captured_when_it_arrives(
    team, site, action, words
):
    site.handle("/api/more", slow_text("Pro costs $49 a month."))
    site.handle("/api/reviews", slow_text("Rated 4.8 by 120 teams."))
    url = site.page("/plans", MORE)
    scrolls = [{"type": "scroll", "direction": "down"}] * 2
    actions = scrolls + [action] if action["type"] == "scroll" else [action]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.NEW
    assert words in page.current_snapshot.text


def test_a_wait_for_an_element_that_never_appears_names_the_step_and_how_long(
    team, site, settings
):
    settings.FETCH_TIMEOUT_SECONDS = 4
    url = site.html("/login", "Sign in", "<form><input id=user></form>")
    actions = [
        {"type": "click", "selector": "#user"},
        {"type": "wait", "selector": "#welcome"},
    ]
    monitor = make_monitor(team, [url], scrape_options={"actions": actions})

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "action"
    assert re.fullmatch(
        r'Action 2 \(wait for "#welcome"\) failed: no visible element matched the '
        r"selector within \d s",
        page.error,
    )


def test_a_page_held_by_a_script_that_never_answers_says_what_it_waited_for(
    team, site, settings
):
    settings.FETCH_TIMEOUT_SECONDS = 4
    answer = threading.Event()
    site.handle(
        "/widget.js",
        lambda request: (
            answer.wait(30),
            (200, {"Content-Type": "text/javascript"}, b""),
        )[1],
    )
    url = site.html("/p", "P", '<p>Plans</p><script src="/widget.js"></script>')
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    try:
        page = page_of(run_check(monitor), url)
    finally:
        answer.set()

    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "timeout"
    assert page.error.endswith(
        f"in the browser; the page was still waiting for {site.url('/widget.js')}"
    )


def test_dialogs_a_new_window_and_a_script_error_leave_the_page_to_be_captured(
    team, site
):
    url = site.html(
        "/p",
        "Plans",
        "<p>Starter costs $19.</p><script>"
        "alert('Welcome!'); const sure = confirm('Stay?');"
        "document.querySelector('main').insertAdjacentHTML("
        "'beforeend', '<p>Stayed: ' + sure + '</p>');"
        "window.open('/offer'); prompt('Your name?');"
        "throw new Error('broken widget');</script>",
    )
    site.html("/offer", "Offer", "<p>Half price today!</p>")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    first = page_of(run_check(monitor), url)
    second = page_of(run_check(monitor), url)

    assert first.status == PageResult.Status.NEW
    assert "Starter costs $19." in first.current_snapshot.text
    assert "Stayed: false" in first.current_snapshot.text  # dialogs dismissed
    assert "Half price" not in first.current_snapshot.text
    assert second.status == PageResult.Status.SAME
