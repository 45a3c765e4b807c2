"""Whether a plain fetch returned a page built by scripts (checks.browser.detect):
pure rules on the body, no browser."""

from __future__ import annotations

import pytest

from checks.browser.detect import script_built

URL = "https://shop.example.com/"
HTML = "text/html; charset=utf-8"
TEXT = "<p>" + "A sentence a reader came for, with its words all there. " * 20 + "</p>"


def page(body: str, head: str = "") -> bytes:
    return (
        f"<!doctype html><html><head>{head}</head><body>{body}</body></html>".encode()
    )


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('<div id="root"></div><script src="/app.js"></script>', "empty app root"),
        ('<div id="__next"> </div><script src="/a.js"></script>', "empty app root"),
        ("<app-root></app-root><script src=main.js></script>", "<app-root>"),
        (
            "<noscript>You need to enable JavaScript to run this app.</noscript>"
            '<div id="main"><p>Loading…</p></div><script src="/a.js"></script>',
            "<noscript> message asking for JavaScript",
        ),
        ("<p>Loading</p><script>boot()</script>", "only 7 characters of text"),
    ],
)
def test_pages_whose_content_needs_their_scripts_are_detected(body, why):
    assert why in script_built(page(body), HTML, url=URL)


@pytest.mark.parametrize(
    "body",
    [
        TEXT,  # no script at all
        TEXT + "<script>track()</script>",  # scripts beside real content
        '<div id="root">' + TEXT + '</div><script src="/hydrate.js"></script>',
        TEXT + "<noscript>Please enable JavaScript for the comments.</noscript>"
        "<script src=c.js></script>",
    ],
    ids=["no-scripts", "tracking-script", "server-rendered-root", "noscript-aside"],
)
def test_pages_with_their_content_in_the_html_are_left_alone(body):
    assert script_built(page(body), HTML, url=URL) is None


def test_only_html_is_looked_at():
    assert (
        script_built(b'{"html": "<script></script>"}', "application/json", url=URL)
        is None
    )
    assert script_built(b"<script>x</script>", "text/plain", url=URL) is None
