"""Every library that could open a connection of its own, handed a URL by a
user, goes through checks.fetch's door and address policy or gets no network.

Each test points a library at an address the policy always blocks (0.0.0.0,
"this network", which Linux answers on the local host) where a listener
records every connection, and asserts that none arrived. Private targets stay
off, as in a default install."""

from __future__ import annotations

import asyncio
import contextlib
import io
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from PIL import Image
from PIL.PngImagePlugin import PngInfo
from protego import Protego
from pypdf import PdfWriter
from pypdf.annotations import Link

from checks import runner
from checks.ai.client import LLM, LLMError, schema_error
from checks.content.extract import extract
from checks.content.readable import readable_html
from checks.content.source import ExtractionError
from checks.content.visual import NotComparable, visual_change
from checks.crawl.discovery import discover
from checks.crawl.scope import Scope
from checks.models import Check, PageResult
from monitors import rules
from monitors.models import Membership, Monitor, Target
from tests import test_browser_safety
from tests.llm import answer
from tests.test_runner import make_monitor

pytest_plugins = ["tests.llm"]


@dataclass
class Listener:
    """A TCP server on 0.0.0.0 that only counts who connected."""

    port: int
    connections: list[tuple[str, int]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://0.0.0.0:{self.port}/"


@pytest.fixture
def forbidden() -> Iterator[Listener]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 0))
    server.listen(16)
    server.settimeout(0.1)
    listener = Listener(port=server.getsockname()[1])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            listener.connections.append(peer)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener
    stop.set()
    thread.join(timeout=2)
    server.close()


@pytest.fixture(autouse=True)
def private_targets_off(settings) -> None:
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False


def test_the_listener_would_see_a_connection(forbidden):
    """The listener is reachable, so an empty record below means no try."""
    with socket.create_connection(("0.0.0.0", forbidden.port), timeout=2):
        pass
    for _ in range(50):
        if forbidden.connections:
            break
        threading.Event().wait(0.02)
    assert forbidden.connections


# --- jsonschema ----------------------------------------------------------------


def _scrape(schema: dict) -> dict:
    return {
        "name": "Plans",
        "schedule": {"text": "every 30 minutes"},
        "targets": [
            {
                "type": "scrape",
                "urls": ["https://example.com/"],
                "scrapeOptions": {"formats": [{"type": "json", "schema": schema}]},
            }
        ],
    }


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ({"$ref": "URL"}, "schema.$ref"),
        ({"$schema": "URL"}, "schema.$schema"),
        (
            {"type": "object", "properties": {"price": {"$ref": "URL#/x"}}},
            "schema.properties.price.$ref",
        ),
        ({"allOf": [{"$dynamicRef": "URL"}]}, "schema.allOf[0].$dynamicRef"),
    ],
)
def test_a_schema_pointing_at_another_document_is_refused_when_saved(
    api, forbidden, schema, field
):
    schema = _replace(schema, "URL", forbidden.url)
    response = api.post("/v2/monitor", _scrape(schema), format="json")

    assert response.status_code == 400
    assert field in response.json()["error"]
    assert forbidden.connections == []


def test_a_schema_with_local_definitions_is_accepted(api):
    schema = {
        "type": "object",
        "$defs": {"price": {"type": "number"}},
        "properties": {"price": {"$ref": "#/$defs/price"}},
        "$schema": "https://json-schema.org/draft/2020-12/schema",
    }
    response = api.post("/v2/monitor", _scrape(schema), format="json")

    assert response.status_code == 200, response.json()


def test_validating_an_answer_never_fetches_a_remote_reference(forbidden):
    """A schema saved before the rule above still cannot make the validator
    fetch: it has an empty registry, so the reference is an error."""
    schema = {"type": "object", "properties": {"a": {"$ref": forbidden.url}}}

    with pytest.raises(LLMError, match="not inside it"):
        schema_error({"a": 1}, schema)

    assert forbidden.connections == []


def test_a_remote_reference_fails_the_request_without_asking_the_model_again(
    model, forbidden
):
    """No answer can fit a schema that points elsewhere: one call, not three."""
    model.then(answer({"price": "$19"}))
    schema = {"type": "object", "properties": {"price": {"$ref": forbidden.url}}}

    async def ask() -> None:
        async with LLM() as llm:
            await llm.ask(name="price", schema=schema, system="s", user="$19")

    with pytest.raises(LLMError, match="not inside it"):
        asyncio.run(ask())
    assert len(model.requests) == 1
    assert forbidden.connections == []


def test_validating_an_answer_follows_local_references():
    schema = {
        "type": "object",
        "$defs": {"price": {"type": "number"}},
        "properties": {"price": {"$ref": "#/$defs/price"}},
    }

    assert schema_error({"price": 3}, schema) is None
    assert "price" in (schema_error({"price": "three"}, schema) or "")


def test_the_rule_names_the_first_remote_reference():
    assert rules.schema_reference_error({"$ref": "#/$defs/a"}) is None
    assert "schema.$ref" in (rules.schema_reference_error({"$ref": "x.json"}) or "")


def _replace(value, old: str, new: str):
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return value.replace(old, new) if isinstance(value, str) else value


def test_the_dashboard_form_refuses_a_stored_remote_schema_by_the_same_rule(
    client, team, django_user_model, forbidden
):
    """A monitor saved through the API before the rule keeps its json format;
    the form, which carries options it does not show, checks them again."""
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    monitor = Monitor.objects.create(
        team=team, name="Pricing", schedule_cron="*/30 * * * *"
    )
    schema = {"properties": {"price": {"$ref": f"{forbidden.url}price.json"}}}
    target = Target.objects.create(
        monitor=monitor,
        type="scrape",
        urls=["https://example.com/"],
        scrape_options={"formats": [{"type": "json", "schema": schema}]},
    )
    form = {
        "name": "Renamed",
        "schedule": "*/30 * * * *",
        "timezone": "UTC",
        "judge": "auto",
        "target": "t1a2b3c4",
        "t1a2b3c4-id": str(target.id),
        "t1a2b3c4-type": "scrape",
        "t1a2b3c4-urls": "https://example.com/",
        "t1a2b3c4-only_main_content": "on",
    }

    response = client.post(f"/monitors/{monitor.pk}/edit/", form)

    assert response.status_code == 400
    assert "schema.properties.price.$ref must point inside" in response.content.decode()
    monitor.refresh_from_db()
    assert monitor.name == "Pricing"
    assert forbidden.connections == []


# --- Libraries that read what a page or a user gives them ------------------------


# A site on 127.0.0.1 standing in for a public server: the policy lets that
# one address through and judges every other with private targets off.
public_site = test_browser_safety.public_site


def test_sitemaps_named_by_robots_or_an_index_are_fetched_through_the_door(
    public_site, forbidden
):
    """ultimate-sitemap-parser would fetch with requests; it is handed our
    client, which refuses the forbidden address wherever it is named."""
    public_site.page(
        "/robots.txt",
        f"Sitemap: {public_site.url('/sitemap.xml')}\nSitemap: {forbidden.url}a.xml\n",
        content_type="text/plain",
    )
    public_site.page(
        "/sitemap.xml",
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/'
        f'schemas/sitemap/0.9"><sitemap><loc>{forbidden.url}b.xml</loc></sitemap>'
        f"<sitemap><loc>{public_site.url('/pages.xml')}</loc></sitemap>"
        "</sitemapindex>",
        content_type="application/xml",
    )
    public_site.page(
        "/pages.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
        f'sitemap/0.9"><url><loc>{public_site.url("/a")}</loc></url></urlset>',
        content_type="application/xml",
    )

    found = discover(Scope(public_site.url("/"), {}), sitemaps=True)

    assert found.sitemap_urls == [public_site.url("/a")]
    assert forbidden.connections == []


def test_robots_rules_naming_other_hosts_are_only_read(public_site, forbidden):
    """protego parses text; its Sitemap lines are read by the step above."""
    robots = f"User-agent: *\nDisallow: /private\nSitemap: {forbidden.url}s.xml\n"
    parsed = Protego.parse(robots)

    assert not parsed.can_fetch(public_site.url("/private"), "Pagewatch")
    assert list(parsed.sitemaps) == [f"{forbidden.url}s.xml"]
    assert forbidden.connections == []


def test_a_page_full_of_addresses_is_extracted_without_a_connection(forbidden):
    """selectolax, html-to-markdown and w3lib turn a page into text and links;
    images, stylesheets, frames and base URLs stay strings."""
    at = forbidden.url
    html = (
        f'<html><head><base href="{at}"><link rel="stylesheet" href="{at}c.css">'
        f'<script src="{at}s.js"></script></head><body><h1>Plans</h1>'
        f'<img src="{at}i.png" srcset="{at}j.png 2x"><iframe src="{at}f"></iframe>'
        f'<a href="{at}x">More</a><object data="{at}o"></object></body></html>'
    ).encode()

    extracted = extract(
        html,
        content_type="text/html",
        url="https://example.com/",
        options={"formats": ["markdown", "links", "images", "html"]},
    )

    assert "Plans" in extracted.markdown
    assert forbidden.connections == []


def test_a_pdf_with_links_and_remote_references_is_read_without_a_connection(
    forbidden,
):
    """pypdf reads the bytes it is given; URI actions are never followed."""
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_annotation(0, Link(rect=(10, 10, 100, 30), url=f"{forbidden.url}p"))
    writer.add_metadata({"/Title": f"See {forbidden.url}"})
    body = io.BytesIO()
    writer.write(body)

    # A blank page has no text to compare; what matters is that nothing was fetched.
    with contextlib.suppress(ExtractionError):
        extract(
            body.getvalue(),
            content_type="application/pdf",
            url="https://example.com/a.pdf",
            options={},
        )

    assert forbidden.connections == []


def test_the_text_view_shows_no_page_address_for_a_browser_to_load(forbidden):
    """markdown-it renders in the dashboard: images and links become their
    words, so the viewer's browser is never sent to a page-chosen address."""
    markdown = f"# Plans\n\n![chart]({forbidden.url}i.png) [more]({forbidden.url})\n"

    html, _ = readable_html(markdown)

    assert "0.0.0.0" not in html
    assert "[image: chart]" in html
    assert forbidden.connections == []


def test_screenshots_are_compared_from_their_bytes_alone(forbidden):
    """Pillow opens the bytes of two captures; text chunks naming a URL in a
    PNG are metadata, never fetched."""
    info = PngInfo()
    info.add_text("XML:com.adobe.xmp", f"<x:xmpmeta><rdf:li>{forbidden.url}</rdf:li>")
    before, after = io.BytesIO(), io.BytesIO()
    Image.new("RGB", (40, 40), "white").save(before, "PNG", pnginfo=info)
    Image.new("RGB", (40, 40), "black").save(after, "PNG", pnginfo=info)

    change = visual_change(before.getvalue(), after.getvalue())

    assert change.changed_fraction > 0.9
    assert forbidden.connections == []


@pytest.mark.parametrize("kind", ["EPS", "GIF"])
def test_only_png_and_jpeg_captures_are_decoded(forbidden, kind):
    """A stored capture is always PNG or JPEG: no other Pillow decoder is
    offered bytes (EPS would hand them to Ghostscript, for one)."""
    if kind == "EPS":
        data = (
            b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 40 40\n"
            + f"({forbidden.url}eps) (r) file\n".encode()
        )
    else:
        data = _image("GIF")

    with pytest.raises(NotComparable):
        visual_change(data, _image("PNG"))
    assert visual_change(_image("JPEG"), _image("PNG")).changed_fraction == 0
    assert forbidden.connections == []


def _image(kind: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 40), "white").save(out, kind)
    return out.getvalue()


def test_the_model_client_cannot_reach_a_forbidden_address(settings, forbidden):
    """The openai package is given an httpx client whose transport is our
    door: even a configured model address is refused when the policy always
    forbids it."""
    settings.LLM_BASE_URL = f"{forbidden.url}v1"
    settings.LLM_MODEL = "stand-in"

    async def ask() -> None:
        async with LLM() as llm:
            await llm.ask(name="t", schema={"type": "object"}, system="s", user="u")

    with pytest.raises(LLMError):
        asyncio.run(ask())
    assert forbidden.connections == []


# --- w3lib and the crawl's scope: URLs are strings ----------------------------------


def test_canonical_urls_of_a_forbidden_address_are_computed_never_visited(forbidden):
    scope = Scope("https://example.com/", {"allowExternalLinks": True})
    url = f"{forbidden.url}a/../b?utm_source=x&z=1&a=2#frag"

    canonical = scope.fetch_url(url)

    assert canonical is not None and canonical.startswith(f"{forbidden.url}b?")
    assert scope.is_blocked_address(url)
    assert scope.admit(url, 1) is None
    assert forbidden.connections == []


# --- Playwright: every request of the browser goes through the guard proxy ---------


@pytest.mark.browser
def test_a_browser_page_reaching_for_a_forbidden_address_reaches_nothing(
    team, public_site, forbidden
):
    test_browser_safety.needs_chromium()
    target = f"0.0.0.0:{forbidden.port}"
    url = public_site.page("/", test_browser_safety.hostile(target, "169.254.169.254"))
    monitor = make_monitor(team, [url], scrape_options={"waitFor": 1000})

    check = Check.objects.create(monitor=monitor, trigger=Check.Trigger.MANUAL)
    Monitor.objects.filter(pk=monitor.pk).update(current_check_id=check.pk)
    page = runner.run(check).pages.get(url=url)

    assert page.status == PageResult.Status.NEW
    assert "0.0.0.0" in " ".join(page.metadata["blockedRequests"])
    assert forbidden.connections == []
