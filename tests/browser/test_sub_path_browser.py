"""Pagewatch at http://127.0.0.1:<port>/pagewatch/ behind a prefix-stripping
proxy, the way nginx's `location /pagewatch/ { proxy_pass http://app/; }`
serves it: real Chromium signs in, creates a monitor through the form, uses
the htmx parts and signs out, and the Firecrawl SDK works through the same
prefix. Every request the proxy sees outside /pagewatch/ is a 404 it records:
a link, a redirect, a script or a fetch that forgot the sub-path."""

from __future__ import annotations

import http.client
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.servers.basehttp import WSGIRequestHandler
from django.urls import set_script_prefix
from firecrawl import Firecrawl
from firecrawl.v2.types import MonitorTarget
from playwright.sync_api import expect

from monitors.models import Monitor
from tests.browser.people import PASSWORD
from tests.browser.test_accessibility_browser import _require_axe, axe_problems, tab_to
from tests.browser.test_sso_browser import provider  # noqa: F401 (a fixture)
from tests.browser.test_tags_browser import make_monitor as make_tagged
from tests.conftest import _SerializedOnSharedConnection

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PREFIX = "/pagewatch"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class PrefixProxy(ThreadingHTTPServer):
    """Passes /pagewatch/... on as /... to the app (or whole, keep_prefix),
    keeping the Host header (nginx's `proxy_set_header Host $host`); answers
    anything else 404."""

    daemon_threads = True

    def __init__(self, upstream: str, *, keep_prefix: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream = urlsplit(upstream)
        self.keep_prefix = keep_prefix
        # Further locations passed on whole (`location /v2/ {...}`).
        self.also: tuple[str, ...] = ()
        self.seen: list[str] = []
        self.outside: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    server: PrefixProxy

    def _forward(self) -> None:
        path = urlsplit(self.path).path
        self.server.seen.append(f"{self.command} {self.path}")
        whole = path.startswith(self.server.also) if self.server.also else False
        if not (whole or path == PREFIX or path.startswith(PREFIX + "/")):
            self.server.outside.append(f"{self.command} {self.path}")
            self.send_error(404)
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        upstream = http.client.HTTPConnection(
            self.server.upstream.hostname, self.server.upstream.port, timeout=30
        )
        keep = whole or self.server.keep_prefix
        passed_on = self.path if keep else self.path[len(PREFIX) :]
        upstream.request(self.command, passed_on or "/", body=body, headers=headers)
        answer = upstream.getresponse()
        content = answer.read()
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)
        upstream.close()

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _forward

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def app_server(live_server) -> Iterator[str]:
    """config.wsgi.application, what gunicorn serves, on the live server's
    database connections."""
    from config.wsgi import application

    server = _SerializedOnSharedConnection(
        ("127.0.0.1", 0),
        _Quiet,
        allow_reuse_address=False,
        connections_override=live_server.thread.connections_override,
    )
    server.set_app(application)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(params=["strips", "keeps"])
def proxy(request, app_server, settings) -> Iterator[PrefixProxy]:
    server = PrefixProxy(app_server, keep_prefix=request.param == "keeps")
    # What config.settings makes of PUBLIC_BASE_URL=<proxy>/pagewatch.
    settings.PUBLIC_BASE_URL = server.url + PREFIX
    settings.FORCE_SCRIPT_NAME = PREFIX
    settings.SESSION_COOKIE_PATH = settings.CSRF_COOKIE_PATH = PREFIX
    settings.STATIC_URL = PREFIX + "/static/"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    set_script_prefix("/")


@pytest.fixture
def page(chromium, proxy) -> Iterator[Any]:
    context = chromium.new_context(base_url=proxy.url)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.problems = []
    page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    yield page
    context.close()


def test_the_dashboard_works_whole_under_a_sub_path(page, proxy, member, queued):
    page.goto(PREFIX + "/")
    page.wait_for_url(re.compile(r"/pagewatch/accounts/login/\?next=/pagewatch/$"))
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"127\.0\.0\.1:\d+/pagewatch/$"))
    page.get_by_text("Nothing is being watched yet").wait_for()

    page.get_by_role("link", name="New monitor").click()
    page.wait_for_url(re.compile(r"/pagewatch/monitors/new/$"))
    page.get_by_label("Name").fill("Pricing")
    page.locator(".target-scrape textarea[name$='-urls']").fill(
        "https://example.com/pricing"
    )
    page.get_by_label("Time zone").fill("UTC")
    page.get_by_label("Schedule").press_sequentially("every 30 minutes")
    expect(page.locator("#schedule-preview")).to_contain_text("Every 30 minutes")
    page.get_by_role("button", name="Create monitor").click()
    page.get_by_role("heading", name="Pricing").wait_for()
    monitor = Monitor.objects.get()
    assert urlsplit(page.url).path == f"/pagewatch/monitors/{monitor.pk}/"

    page.get_by_role("button", name="Run now").click()
    page.locator("#run-status").get_by_text("Waiting for a worker").wait_for()
    assert len(queued) == 1

    page.get_by_role("link", name="Monitors", exact=True).first.click()
    page.get_by_role("link", name="Pricing").wait_for()
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/pagewatch/accounts/login/$"))
    # Signing in with no page asked for lands on the monitors, not at "/".
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"127\.0\.0\.1:\d+/pagewatch/$"))
    page.get_by_role("link", name="Pricing").wait_for()

    assert proxy.outside == []
    assert page.problems == []
    assert any("/pagewatch/static/" in request for request in proxy.seen)
    cookie_paths = {c["name"]: c["path"] for c in page.context.cookies()}
    assert cookie_paths.get("csrftoken") == "/pagewatch"


def test_the_firecrawl_sdk_works_beside_a_sub_path_with_v2_passed_on(
    proxy, api_key, team
):
    """firecrawl-py joins "/v2/monitor" onto api_url's host, dropping any path
    (urljoin), so the README has the proxy pass /v2/ on as well; the API's
    own links (`next`) stay under the sub-path, which works too."""
    proxy.also = ("/v2/",)
    sdk = Firecrawl(api_key=api_key, api_url=proxy.url + PREFIX, max_retries=1)
    created = sdk.create_monitor(
        name="Pricing page",
        schedule={"text": "every 30 minutes"},
        targets=[MonitorTarget(type="scrape", urls=["https://example.com/pricing"])],
    )
    assert Monitor.objects.get(team=team).name == "Pricing page"
    assert sdk.get_monitor(created.id).name == "Pricing page"
    assert [m.id for m in sdk.list_monitors()] == [created.id]
    assert sdk.delete_monitor(created.id) is True
    assert Monitor.objects.get(pk=created.id).deleted_at is not None
    assert proxy.outside == []
    assert proxy.seen[0] == "POST /v2/monitor"


@pytest.mark.usefixtures("provider", "team")
def test_single_sign_on_comes_back_inside_the_sub_path(page, proxy):
    page.goto(PREFIX + "/accounts/login/")
    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.get_by_role("button", name="Authorize as mallory").click()  # unverified
    page.wait_for_url(re.compile(r"/pagewatch/accounts/login/\?sso=failed$"))
    page.get_by_text("Acme ID did not sign you in.").wait_for()

    page.get_by_role("link", name="Sign in with Acme ID").click()
    page.get_by_role("button", name="Authorize as sam").click()
    page.wait_for_url(re.compile(r"127\.0\.0\.1:\d+/pagewatch/$"))
    page.get_by_role("heading", name="Monitors").wait_for()
    assert proxy.outside == []
    assert any(
        r.startswith("GET /pagewatch/accounts/sso/callback/") for r in proxy.seen
    )


def test_ticked_monitors_are_paused_from_the_keyboard_under_a_sub_path(
    page, proxy, member, team
):
    """The list's bulk bar sends the person back inside the sub-path, with
    the keyboard at what it did; axe finds nothing there, before or after."""
    page.context.add_init_script(path=str(_require_axe()))
    make_tagged(team, "Rival prices", ["Competitors"])
    make_tagged(team, "Our own shop")
    page.goto(PREFIX + "/accounts/login/")
    page.get_by_label("User name").fill("olive")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"127\.0\.0\.1:\d+/pagewatch/$"))
    assert axe_problems(page, "monitor list under a sub-path") == []

    tab_to(page, "Select Rival prices")
    page.keyboard.press("Space")
    tab_to(page, "Pause", back=True)
    with page.expect_navigation():
        page.keyboard.press("Enter")

    assert urlsplit(page.url).path == PREFIX + "/"
    outcome = page.evaluate(
        "[document.activeElement.getAttribute('role'),"
        " document.activeElement.textContent.trim()]"
    )
    assert outcome == ["status", "1 monitor paused."]
    assert axe_problems(page, "monitor list under a sub-path, paused") == []
    assert Monitor.objects.get(name="Rival prices").status == "paused"
    assert proxy.outside == []
    assert page.problems == []
