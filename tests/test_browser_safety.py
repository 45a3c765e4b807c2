"""SSRF through the browser: whatever a page does -- images, iframes, fetch,
XHR, WebSockets, HTTPS, redirects, navigating by script, a DNS answer that
changes -- no connection ever reaches a forbidden address.

As in tests/test_crawl.py, 127.0.0.1 stands in for a public server and every
other address is judged by the real policy with private targets forbidden.
A trap listens on 127.0.0.2 (loopback: forbidden) and records every
connection made to it; names are answered by a resolver the test controls,
so the proxy's own lookups are what is tested (Chromium resolves nothing).
The proxy's rules are also tested alone, without Chromium, at the end."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from checks import runner
from checks.browser import chromium
from checks.browser.proxy import GuardProxy
from checks.fetch import transport
from checks.models import Check, PageResult
from monitors.models import Monitor
from tests.sites import Site
from tests.test_browser_pages import CHROMIUM
from tests.test_runner import make_monitor, page_of


class Trap:
    """A listener on 127.0.0.2 that records every connection it is offered
    (and answers like a web server, so a leak would be visible)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.2", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.connections.append(conn.recv(4096))
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nLEAKED")
                except OSError:
                    self.connections.append(b"")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def trap() -> Iterator[Trap]:
    running = Trap()
    yield running
    running.close()


@pytest.fixture
def public_site(monkeypatch, settings) -> Iterator[Site]:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    real = transport.address_block_reason

    def policy(ip: Any, allow_private: bool) -> str | None:
        return None if str(ip) == "127.0.0.1" else real(ip, allow_private)

    monkeypatch.setattr(transport, "address_block_reason", policy)
    with Site() as running:
        yield running


class Resolver:
    """internal.test is private, metadata.test the cloud's metadata service,
    rebind.test public until `rebind()`; every other name is public."""

    def __init__(self) -> None:
        self.rebound = False
        self.asked: list[str] = []

    def rebind(self) -> None:
        self.rebound = True

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host == "internal.test":
            return ["127.0.0.2"]
        if host == "metadata.test":
            return ["169.254.169.254"]
        if host == "rebind.test" and self.rebound:
            return ["127.0.0.2"]
        return ["127.0.0.1"]


def run_check(monitor: Monitor, resolver: Resolver) -> Check:
    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    return runner.run(check, resolver=resolver)


def needs_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: install Debian's chromium"
    # CI must run these: there a missing Chromium fails, as it does for the
    # browser page tests, instead of passing quietly.
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: not skipping)", pytrace=False)
    pytest.skip(reason)


def test_a_missing_chromium_fails_these_tests_on_ci_and_skips_them_elsewhere(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setitem(globals(), "CHROMIUM", tmp_path / "chromium")

    # Outcomes are BaseExceptions: caught here, a skip cannot skip this test.
    monkeypatch.setenv("CI", "true")
    with pytest.raises(BaseException) as on_ci:
        needs_chromium()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(BaseException) as elsewhere:
        needs_chromium()

    assert on_ci.type is pytest.fail.Exception and "CI=true" in str(on_ci.value)
    assert elsewhere.type is pytest.skip.Exception


def hostile(target: str, metadata: str) -> str:
    """A page that reaches for `target` every way a page can."""
    return f"""<!doctype html><html><head><title>Hostile</title></head><body>
<main><p>An ordinary looking page with enough words to be read as one.</p></main>
<img src="http://{target}/img.png">
<img src="http://{metadata}/latest/meta-data/">
<iframe src="http://{target}/frame"></iframe>
<iframe src="file:///etc/passwd"></iframe>
<link rel="stylesheet" href="https://{target}/style.css">
<script>
  fetch("http://{target}/fetch").catch(() => {{}});
  fetch("https://{target}/secure").catch(() => {{}});
  const xhr = new XMLHttpRequest();
  xhr.open("GET", "http://{target}/xhr");
  xhr.send();
  try {{ new WebSocket("ws://{target}/ws"); }} catch (e) {{}}
  try {{ new WebSocket("wss://{target}/wss"); }} catch (e) {{}}
  new Worker(URL.createObjectURL(new Blob(
    ['fetch("http://{target}/worker").catch(() => {{}})'])));
  navigator.sendBeacon("http://{target}/beacon", "x");
</script></body></html>"""


@pytest.mark.browser
@pytest.mark.parametrize(
    ("by", "metadata"),
    [("internal.test", "metadata.test"), ("127.0.0.2", "169.254.169.254")],
    ids=["names-the-proxy-resolves", "ip-literals"],
)
def test_a_page_reaching_for_private_addresses_reaches_none_of_them(
    team, public_site, trap, by, metadata
):
    needs_chromium()
    url = public_site.page("/", hostile(f"{by}:{trap.port}", metadata))
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 1500})

    page = page_of(run_check(monitor, Resolver()), url)

    assert trap.connections == []
    assert page.status == PageResult.Status.NEW
    assert "LEAKED" not in page.current_snapshot.source
    assert "root:x:0:0" not in page.current_snapshot.source
    blocked = " ".join(page.metadata["blockedRequests"])
    assert "127.0.0.2 is a loopback address" in blocked
    assert "169.254.169.254 is a cloud metadata address" in blocked


@pytest.mark.browser
def test_a_page_that_navigates_by_script_to_a_private_address_is_an_error(
    team, public_site, trap
):
    needs_chromium()
    url = public_site.page(
        "/",
        "<html><body><p>Moving on</p><script>"
        f'location.href = "http://internal.test:{trap.port}/admin";'
        "</script></body></html>",
    )
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 1000})

    page = page_of(run_check(monitor, Resolver()), url)

    assert trap.connections == []
    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "blocked_address"
    assert page.error == (
        "Blocked: 127.0.0.2 is a loopback address (internal.test resolves to it)"
    )


@pytest.mark.browser
def test_a_redirect_to_a_private_address_is_refused(team, public_site, trap):
    needs_chromium()
    public_site.redirect("/jump", f"https://internal.test:{trap.port}/")
    url = public_site.url("/jump")
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})

    page = page_of(run_check(monitor, Resolver()), url)

    assert trap.connections == []
    assert page.status == PageResult.Status.ERROR
    assert page.error_kind == "blocked_address"


@pytest.mark.browser
def test_a_name_whose_address_changes_between_checks_is_refused_the_second_time(
    team, public_site, trap
):
    needs_chromium()
    public_site.html("/", "Rebind", "<p>Fine for now.</p>")
    url = f"http://rebind.test:{public_site.port}/"
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 10})
    resolver = Resolver()

    first = page_of(run_check(monitor, resolver), url)
    resolver.rebind()
    trap_on_same_port = socket.socket()
    trap_on_same_port.bind(("127.0.0.2", public_site.port))
    trap_on_same_port.listen(1)
    trap_on_same_port.setblocking(False)
    try:
        second = page_of(run_check(monitor, resolver), url)
        with pytest.raises(BlockingIOError):
            trap_on_same_port.accept()  # nobody came
    finally:
        trap_on_same_port.close()

    assert first.status == PageResult.Status.NEW
    assert second.status == PageResult.Status.ERROR
    assert second.error_kind == "blocked_address"
    assert "rebind.test" in resolver.asked


# --- Chromium's own services ------------------------------------------------------

SIGN_UP = """<!doctype html><html><head><title>Sign up</title></head><body>
<main><p>Tell us where to send the catalogue and we will post it this week.</p>
<form action="/send" method="post">
  <label>Name <input name="name" autocomplete="name"></label>
  <label>E-mail <input type="email" name="email" autocomplete="email"></label>
  <label>Street <input name="street" autocomplete="street-address"></label>
  <label>Town <input name="town" autocomplete="address-level2"></label>
  <label>Postcode <input name="postcode" autocomplete="postal-code"></label>
  <label>Password <input type="password" name="password"></label>
  <button>Send</button>
</form></main></body></html>"""


@pytest.mark.browser
def test_a_page_with_a_form_sends_nothing_to_chromiums_autofill_service(
    team, public_site
):
    # Chromium asks Google's autofill server about every form it sees, through
    # the page's own proxy: the form's signatures would leave with it, and the
    # page would be blamed for the request in its blocked requests.
    needs_chromium()
    public_site.page("/", SIGN_UP)
    url = f"http://shop.test:{public_site.port}/"
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 2000})
    resolver = Resolver()

    page = page_of(run_check(monitor, resolver), url)

    assert page.status == PageResult.Status.NEW
    assert "catalogue" in page.current_snapshot.text
    assert "content-autofill.googleapis.com" not in resolver.asked
    assert set(resolver.asked) == {"shop.test"}  # the page's own site only
    blocked = " ".join(page.metadata.get("blockedRequests", []))
    assert "googleapis" not in blocked


@pytest.mark.browser
def test_a_fresh_chromium_asks_for_nothing_outside_its_pages(team, public_site, caplog):
    # A starting Chromium lists the Google accounts of its profile
    # (accounts.google.com) and asks for component updates
    # (update.googleapis.com) by itself; the proxy outside pages refuses
    # both, but they should not be asked for at all.
    needs_chromium()
    service = chromium.service()
    service.submit(service.stop()).result(60)  # the next page starts a new one
    caplog.set_level(logging.DEBUG, logger="checks.browser.proxy")
    public_site.page("/", SIGN_UP)
    url = f"http://shop.test:{public_site.port}/"
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 3000})
    resolver = Resolver()

    page = page_of(run_check(monitor, resolver), url)

    assert page.status == PageResult.Status.NEW
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refused == []
    assert set(resolver.asked) == {"shop.test"}


# --- The proxy alone --------------------------------------------------------------


async def _ask_proxy(proxy: GuardProxy, request: bytes) -> bytes:
    port = int(proxy.url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    # The proxy closes the connection after one answer: read up to its end.
    answer = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return answer


def proxy_says(request: bytes, resolver: Any, **options: Any) -> tuple[bytes, Any]:
    async def go() -> tuple[bytes, Any]:
        proxy = GuardProxy(resolver, max_bytes=options.pop("max_bytes", 10**6))
        proxy.refuse_all = options.pop("refuse_all", False)
        await proxy.start()
        try:
            return await _ask_proxy(proxy, request), proxy
        finally:
            await proxy.close()

    return asyncio.run(go())


def test_the_proxy_refuses_a_tunnel_to_a_private_address(public_site, trap):
    request = f"CONNECT internal.test:{trap.port} HTTP/1.1\r\n\r\n".encode()

    answer, proxy = proxy_says(request, Resolver())

    assert answer.startswith(b"HTTP/1.1 403")
    assert trap.connections == []
    assert proxy.refused == [
        "Blocked: 127.0.0.2 is a loopback address (internal.test resolves to it)"
    ]


def test_the_proxy_forwards_plain_requests_to_the_vetted_address_one_per_connection(
    public_site,
):
    public_site.html("/p", "P", "<p>hello</p>")
    request = (
        f"GET http://public.test:{public_site.port}/p?q=1 HTTP/1.1\r\n"
        f"Host: public.test:{public_site.port}\r\n"
        "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\n"
        "Connection: keep-alive, X-Secret\r\nX-Secret: 1\r\nX-Kept: 2\r\n\r\n"
    ).encode()

    answer, _ = proxy_says(request, Resolver())

    head = answer.split(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.0 200") or head.startswith(b"http/1.1 200")
    assert b"connection: close" in head and b"proxy-connection: close" in head
    assert answer.endswith(b"<p>hello</p></main></body></html>")
    [seen] = public_site.requests_to("/p")
    assert seen.path == "/p?q=1"
    assert seen.header("X-Kept") == "2"
    for gone in ("Proxy-Connection", "Proxy-Authorization", "X-Secret"):
        assert seen.header(gone) is None
    assert seen.header("Connection") == "close"


def test_the_browser_wide_proxy_refuses_everything(public_site):
    request = f"CONNECT 127.0.0.1:{public_site.port} HTTP/1.1\r\n\r\n".encode()

    answer, proxy = proxy_says(request, Resolver(), refuse_all=True)

    assert answer.startswith(b"HTTP/1.1 403")
    assert public_site.requests == []
    assert "outside a page" in proxy.refused[0]


def test_the_proxy_stops_a_page_past_its_byte_allowance(public_site):
    public_site.page("/big", "x" * 100_000, content_type="text/plain")
    request = f"GET {public_site.url('/big')} HTTP/1.1\r\n\r\n".encode()

    answer, proxy = proxy_says(request, Resolver(), max_bytes=10_000)

    assert proxy.too_large
    assert len(answer) < 100_000
