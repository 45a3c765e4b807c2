"""Everyday noise on real pages served on 127.0.0.1, checked twice with the
per-request part different each time and no goal: what a reader never sees
(tokens in hidden fields and attributes, ad slots and pixels with random ids,
a cookie banner coming and going) leaves the page `same`; what a reader sees
(a clock, a counter, a relative time, a rotating quote) is a change, for the
monitor's lines to ignore or its goal to deal with, never hidden by default."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checks import runner
from checks.models import Check, PageResult
from monitors.models import Monitor, Target, Team
from tests.sites import Site

pytestmark = pytest.mark.django_db

ARTICLE = "<h1>News</h1><p>Our prices stay the same this year.</p>"

UNSEEN: dict[str, Callable[[int], str]] = {
    "a CSRF token in a hidden field": lambda n: (
        f'<form><input type="hidden" name="csrfmiddlewaretoken" value="t{n}k">'
        "<button>Go</button></form>"
    ),
    "a CSRF token in a meta tag": lambda n: f'<meta name="csrf-token" content="a{n}">',
    "script and style nonces": lambda n: (
        f'<script nonce="n{n}">var t="{n}";</script><style nonce="n{n}">p{{}}</style>'
    ),
    "a noscript pixel and an ad slot with random ids": lambda n: (
        f'<noscript><img src="/px?id={n}77" alt=""></noscript>'
        f'<div id="ad-{n}91" class="ad-slot"><a href="/ad?c={n}">Buy shoes</a></div>'
    ),
    "a cookie banner shown on one visit only": lambda n: (
        '<div id="cookie-banner"><p>We use cookies. <button>Accept</button></p></div>'
        if n == 1
        else ""
    ),
}

# Each with the line the second check's diff adds.
SEEN: dict[str, tuple[Callable[[int], str], str]] = {
    "a last-updated clock": (
        lambda n: f"<p>Last updated: 01:0{n} UTC</p>",
        "+Last updated: 01:02 UTC",
    ),
    "a view counter": (lambda n: f"<p>{n},234 views</p>", "+2,234 views"),
    "a relative time": (
        lambda n: f"<p>Posted {n} minutes ago</p>",
        "+Posted 2 minutes ago",
    ),
    "a rotating testimonial": (
        lambda n: f"<blockquote>{['', 'Great!', 'Saved my day'][n]}</blockquote>",
        "+> Saved my day",
    ),
    # The image may well be a new one: the address is what the page says.
    "a cache-busting query on an image": (
        lambda n: f'<img src="/a.png?v={n}" alt="A">',
        "/a.png?v=2)",
    ),
}


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def second_check(team: Team, site: Site, noise: Callable[[int], str]) -> PageResult:
    url = site.html("/news", "News", ARTICLE + noise(1))
    monitor = Monitor.objects.create(team=team, name="News", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])
    runner.run(Check.objects.create(monitor=monitor, trigger="manual"))
    site.html("/news", "News", ARTICLE + noise(2))
    check = runner.run(Check.objects.create(monitor=monitor, trigger="manual"))
    return check.pages.get(url=url)


@pytest.mark.parametrize("name", UNSEEN)
def test_what_a_reader_never_sees_leaves_the_page_the_same(team, site, name):
    assert second_check(team, site, UNSEEN[name]).status == PageResult.Status.SAME


@pytest.mark.parametrize("name", SEEN)
def test_what_a_reader_sees_is_a_change_left_to_the_monitors_rules(team, site, name):
    noise, added = SEEN[name]
    page = second_check(team, site, noise)
    assert page.status == PageResult.Status.CHANGED
    [line] = [
        line
        for line in page.diff["text"].splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert line.endswith(added) and line.startswith("+")
