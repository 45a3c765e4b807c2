"""Atom feeds of changes: one per monitor and one per team, at a token link a
member can replace and a team can turn off; read by a feed reader's parser
(feedparser), bounded and cheap, and announced in the API as feedUrl."""

from __future__ import annotations

import importlib
import re
import uuid
from datetime import timedelta
from xml.etree import ElementTree

import feedparser
import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from firecrawl import Firecrawl
from firecrawl.v2.types import MonitorTarget

from checks.content import compare_texts
from checks.models import Check, PageResult, Snapshot
from monitors import history
from monitors.editing import create_monitor
from monitors.models import Membership, Monitor, Team
from monitors.wire.monitor import MonitorWriteSerializer

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"


# ---------------------------------------------------------------- personas


@pytest.fixture
def member(team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def web(client, member):
    client.force_login(member)
    return client


@pytest.fixture
def outsider_web(client, other_team, django_user_model):
    user = django_user_model.objects.create_user("oscar", "oscar@example.com", "pw")
    Membership.objects.create(team=other_team, user=user)
    client.force_login(user)
    return client


def make_monitor(team: Team, name: str = "Pricing page", **overrides) -> Monitor:
    body = {
        "name": name,
        "schedule": {"cron": "*/30 * * * *", "timezone": "UTC"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
        **overrides,
    }
    serializer = MonitorWriteSerializer(data=body)
    serializer.is_valid(raise_exception=True)
    return create_monitor(team, serializer.validated_data, timezone.now())


@pytest.fixture
def monitor(team) -> Monitor:
    return make_monitor(team, goal="Tell me when prices change", judgeEnabled=True)


def make_check(monitor: Monitor, ago: int = 0, **counts: int) -> Check:
    finished = timezone.now() - timedelta(minutes=ago)
    summary = {"totalPages": 0, "same": 0, "changed": 0, "new": 0, "removed": 0,
               "error": 0} | counts  # fmt: skip
    summary["totalPages"] = sum(counts.values())
    return Check.objects.create(
        monitor=monitor,
        trigger=Check.Trigger.MANUAL,
        status=Check.Status.COMPLETED,
        started_at=finished - timedelta(seconds=30),
        finished_at=finished,
        summary=summary,
    )


def make_page(
    check: Check,
    url: str,
    status: str = "changed",
    before: str = "Price: 10 EUR\n",
    after: str = "Price: 12 EUR\n",
    **fields,
) -> PageResult:
    diff = None
    if status == "changed":
        _, _, diff = compare_texts(before, after)
    return PageResult.objects.create(
        check_run=check,
        target_id=check.monitor.targets.first().pk,
        url=url,
        status=status,
        current_snapshot=Snapshot.store(after),
        diff=diff,
        **fields,
    )


def judged(meaningful: bool, reason: str, **extra) -> dict:
    return {
        "judgment": {
            "meaningful": meaningful,
            "confidence": "high",
            "reason": reason,
            "meaningfulChanges": extra.pop("changes", []),
        },
        "verdict": "meaningful" if meaningful else "noise",
        **extra,
    }


def read(client, url: str):
    """The feed at `url` as a feed reader sees it, after checking it parsed
    without complaint as Atom 1.0."""
    response = client.get(url)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/atom+xml")
    parsed = feedparser.parse(response.content)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    # What RFC 4287 requires of a feed and of each entry.
    assert parsed.feed.id and parsed.feed.title and parsed.feed.updated_parsed
    assert parsed.feed.author == "Pagewatch"
    for entry in parsed.entries:
        assert entry.id and entry.title and entry.updated_parsed and entry.link
    return parsed


def path_of(url: str) -> str:
    assert url.startswith(settings.PUBLIC_BASE_URL + "/")
    return url[len(settings.PUBLIC_BASE_URL) :]


def terms(entry) -> set[str]:
    return {tag.term for tag in entry.get("tags", [])}


# ---------------------------------------------------------------- the feeds


def test_a_feed_reader_reads_the_monitors_changes_newest_first(client, monitor):
    older = make_check(monitor, ago=60, changed=1)
    make_page(older, "https://example.com/old")
    newer = make_check(monitor, ago=5, changed=1, new=1)
    make_page(newer, "https://example.com/pricing")
    make_page(newer, "https://example.com/added", status="new")
    make_check(monitor, ago=2, same=1)  # nothing changed: not in the feed

    feed = read(client, path_of(monitor.feed_url))

    assert feed.feed.title == "Pricing page: changes found by Pagewatch"
    links = {link.rel: link.href for link in feed.feed.links}
    assert links["self"] == monitor.feed_url
    assert links["alternate"] == settings.PUBLIC_BASE_URL + monitor.get_absolute_url()
    assert [e.title for e in feed.entries] == [
        "Meaningful change: https://example.com/pricing",
        "New page: https://example.com/added",
        "Meaningful change: https://example.com/old",
    ]
    page = PageResult.objects.get(url="https://example.com/pricing")
    first = feed.entries[0]
    assert first.link == settings.PUBLIC_BASE_URL + page.get_absolute_url()
    assert first.id == f"urn:uuid:{page.pk}"
    assert first.updated_parsed is not None


def test_meaningful_changes_are_marked_with_the_judges_reason_and_the_diff(
    client, monitor
):
    check = make_check(monitor, changed=3)
    make_page(
        check,
        "https://example.com/pricing",
        **judged(
            True,
            "The price of the basic plan went up.",
            changes=[
                {
                    "type": "modified",
                    "before": "10 EUR",
                    "after": "12 EUR",
                    "reason": "price",
                }
            ],  # fmt: skip
        ),
    )
    make_page(
        check,
        "https://example.com/footer",
        before="© 2025\n",
        after="© 2026\n",
        **judged(False, "Only the copyright year changed."),
    )
    make_page(
        check,
        "https://example.com/terms",
        judgment={
            "meaningful": True,
            "confidence": "low",
            "reason": "No model.",
            "meaningfulChanges": [],
        },  # fmt: skip
        verdict="not_judged",
    )

    entries = {
        e.link.rsplit("/", 2)[-2]: e
        for e in read(client, path_of(monitor.feed_url)).entries
    }
    by_url = {PageResult.objects.get(pk=pk).url: entry for pk, entry in entries.items()}

    meaningful = by_url["https://example.com/pricing"]
    assert meaningful.title.startswith("Meaningful change:")
    assert terms(meaningful) == {"changed", "meaningful"}
    assert "Why it matters: The price of the basic plan went up." in meaningful.summary
    assert "10 EUR" in meaningful.summary and "12 EUR" in meaningful.summary
    assert "-Price: 10 EUR" in meaningful.summary  # the diff excerpt
    assert "+Price: 12 EUR" in meaningful.summary

    noise = by_url["https://example.com/footer"]
    assert noise.title.startswith("Change judged unimportant:")
    assert "meaningful" not in terms(noise)
    assert "not-meaningful" in terms(noise)  # what feed readers filter on
    assert "Why the judge found it unimportant: Only the copyright" in noise.summary
    assert "not meaningful" not in noise.summary

    unjudged = by_url["https://example.com/terms"]
    assert unjudged.title.startswith("Change (not judged):")
    assert terms(unjudged) == {"changed", "meaningful", "not-judged"}
    assert "could not look at this change" in unjudged.summary
    assert "No model." not in unjudged.summary  # a fail-open reason is no reason


def test_every_change_counts_as_meaningful_when_the_monitor_does_not_judge(
    client, team
):
    unjudged = make_monitor(team, name="No goal")
    make_page(make_check(unjudged, changed=1), "https://example.com/pricing")

    [entry] = read(client, path_of(unjudged.feed_url)).entries

    assert entry.title == "Meaningful change: https://example.com/pricing"
    assert "meaningful" in terms(entry)
    assert "does not judge its changes" in entry.summary


def test_a_web_searchs_new_match_is_an_entry_named_as_a_match_not_a_page(
    client, monitor
):
    check = make_check(monitor, new=2)
    make_page(
        check,
        "https://news.example/launch",
        status="new",
        metadata={"searchStatus": "alert"},
        **judged(True, "The page reports the launch."),
    )
    make_page(check, "https://example.com/added", status="new")

    entries = {e.title: e for e in read(client, path_of(monitor.feed_url)).entries}

    match = entries["New match: https://news.example/launch"]
    assert "Why it matters: The page reports the launch." in match.summary
    added = entries["New page: https://example.com/added"]
    # A new page or match has no earlier text to compare: its link opens it.
    for entry in (match, added):
        assert "See what changed" not in entry.summary
        assert "Open it in Pagewatch" in entry.summary


def test_control_characters_from_a_page_or_a_name_do_not_break_the_feed(client, team):
    # A PDF's text holds form feeds; names and quotes may hold other control
    # characters, which XML cannot: the feed answered 500 to every reader.
    monitor = make_monitor(team, name="Prices\x0bEU", goal="Prices", judgeEnabled=True)
    check = make_check(monitor, changed=1)
    quote = {"type": "modified", "before": "10\x1bEUR", "after": "12", "reason": "r"}
    make_page(
        check,
        "https://example.com/price-list.pdf",
        before="Price\x0c 10 EUR\n",
        after="Price\x0c 12 EUR\n",
        **judged(True, "The price went up.", changes=[quote]),
    )

    feed = read(client, path_of(monitor.feed_url))
    team_feed = read(client, path_of(team.feed_url))

    assert feed.feed.title == "PricesEU: changes found by Pagewatch"
    [entry] = feed.entries
    assert "+ 12 EUR" in entry.summary and "10EUR" in entry.summary
    assert len(team_feed.entries) == 1


def test_the_team_feed_lists_every_monitor_of_the_team_and_no_other(
    client, team, other_team, monitor
):
    second = make_monitor(team, name="Careers")
    make_page(make_check(monitor, ago=10, changed=1), "https://example.com/pricing")
    make_page(make_check(second, ago=5, new=1), "https://example.com/jobs", "new")
    foreign = make_monitor(other_team, name="Globex secret plans")
    make_page(make_check(foreign, changed=1), "https://globex.example/plans")
    deleted = make_monitor(team, name="Gone")
    make_page(make_check(deleted, changed=1), "https://example.com/gone")
    deleted.soft_delete(timezone.now())

    feed = read(client, path_of(team.feed_url))

    assert feed.feed.title == "Acme: changes found by Pagewatch"
    assert [e.title for e in feed.entries] == [
        "Careers · New page: https://example.com/jobs",
        "Pricing page · Meaningful change: https://example.com/pricing",
    ]


def test_page_text_in_an_entry_is_escaped_html(client, monitor):
    check = make_check(monitor, changed=1)
    make_page(
        check,
        "javascript:alert(1)",
        before="<b>old</b>\n",
        after="<script>alert('x')</script>\n",
        **judged(True, "<img src=x onerror=alert(1)>"),
    )

    response = client.get(path_of(monitor.feed_url))

    entry = ElementTree.fromstring(response.content).find(f"{ATOM}entry")
    summary = entry.find(f"{ATOM}summary")
    assert summary.get("type") == "html"
    html = summary.text  # the HTML a reader renders
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html
    assert 'href="javascript' not in html  # not an http(s) address: text only
    assert entry.find(f"{ATOM}title").text.startswith("Meaningful change: javascript")


# ---------------------------------------------------------------- cost


def test_a_feed_is_bounded_and_asks_the_database_three_times(
    client, team, monitor, django_assert_num_queries
):
    for n in range(history.ATOM_ENTRIES + 5):
        check = make_check(monitor, ago=n, changed=1, new=1)
        make_page(check, f"https://example.com/p{n}")
        make_page(check, f"https://example.com/new{n}", status="new")
    crawl = make_check(monitor, ago=-1, changed=40)  # the newest check
    for n in range(40):
        make_page(crawl, f"https://example.com/crawl/{n}")

    # The feed's monitor (with its team), its checks, their pages.
    with django_assert_num_queries(3):
        response = client.get(path_of(monitor.feed_url))
    entries = feedparser.parse(response.content).entries
    assert len(entries) == history.ATOM_ENTRIES
    crawled = [e for e in entries if "/crawl/" in e.title]
    assert len(crawled) == history.ATOM_PAGES_PER_CHECK
    assert "this check found 40 changes in all" in crawled[0].summary

    with django_assert_num_queries(3):
        response = client.get(path_of(team.feed_url))
    assert len(feedparser.parse(response.content).entries) == history.ATOM_ENTRIES


def test_a_feed_reads_no_pages_of_the_older_checks_it_leaves_out(client, monitor):
    per_check = history.ATOM_PAGES_PER_CHECK
    checks = [make_check(monitor, ago=8 - n, changed=per_check) for n in range(8)]
    for n, check in enumerate(checks):
        for p in range(per_check):
            make_page(check, f"https://example.com/{n}/{p}")
    checks.reverse()  # newest first, as the feed lists them

    with CaptureQueriesContext(connection) as queries:
        assert len(read(client, path_of(monitor.feed_url)).entries) == 50

    [pages] = [q["sql"] for q in queries if '"checks_pageresult"' in q["sql"]]
    filled = history.ATOM_ENTRIES // per_check
    newest, older = checks[:filled], checks[filled:]
    assert all(check.pk.hex in pages for check in newest)
    assert not any(check.pk.hex in pages for check in older)


# ---------------------------------------------------------------- links


def test_making_a_new_link_makes_the_old_one_404(web, client, monitor, team):
    old_monitor_feed, old_team_feed = monitor.feed_url, team.feed_url

    response = web.post(reverse("monitor-feed-renew", args=[monitor.pk]))
    assert response.status_code == 302
    response = web.post(reverse("team-feed-renew"))
    assert response.status_code == 302

    monitor.refresh_from_db()
    team.refresh_from_db()
    assert monitor.feed_url != old_monitor_feed
    assert team.feed_url != old_team_feed
    client.logout()  # a feed reader has no session
    assert client.get(path_of(old_monitor_feed)).status_code == 404
    assert client.get(path_of(old_team_feed)).status_code == 404
    read(client, path_of(monitor.feed_url))
    read(client, path_of(team.feed_url))


def test_another_teams_member_cannot_make_a_new_link_of_a_monitor(
    outsider_web, monitor
):
    token = monitor.feed_token
    response = outsider_web.post(reverse("monitor-feed-renew", args=[monitor.pk]))
    assert response.status_code == 404
    monitor.refresh_from_db()
    assert monitor.feed_token == token


def test_a_viewer_sees_the_links_but_cannot_replace_them_or_turn_feeds_off(
    client, team, monitor, django_user_model
):
    viewer = django_user_model.objects.create_user("vera", "vera@example.com", "pw")
    Membership.objects.create(team=team, user=viewer, role=Membership.Role.VIEWER)
    client.force_login(viewer)
    tokens = (monitor.feed_token, team.feed_token)

    assert monitor.feed_url in client.get(monitor.get_absolute_url()).content.decode()
    assert team.feed_url in client.get(reverse("team-members")).content.decode()
    for url, data in (
        (reverse("monitor-feed-renew", args=[monitor.pk]), {}),
        (reverse("team-feed-renew"), {}),
        (reverse("team-feeds-switch"), {"feeds": "off"}),
    ):
        assert client.post(url, data).status_code == 403

    monitor.refresh_from_db()
    team.refresh_from_db()
    assert (monitor.feed_token, team.feed_token) == tokens
    assert team.feeds_enabled is True


def test_turning_feeds_off_ends_every_feed_of_the_team_and_nulls_feed_url(
    web, client, api, team, monitor
):
    feeds = [path_of(monitor.feed_url), path_of(team.feed_url)]

    response = web.post(reverse("team-feeds-switch"), {"feeds": "off"})
    assert response.status_code == 302
    team.refresh_from_db()
    assert team.feeds_enabled is False
    assert [client.get(feed).status_code for feed in feeds] == [404, 404]
    assert api.get(f"/v2/monitor/{monitor.pk}").json()["data"]["feedUrl"] is None
    assert [m["feedUrl"] for m in api.get("/v2/monitor").json()["data"]] == [None]
    page = web.get(monitor.get_absolute_url()).content.decode()
    assert "Feeds are off for this team" in page

    web.post(reverse("team-feeds-switch"), {"feeds": "on"})
    assert [client.get(feed).status_code for feed in feeds] == [200, 200]


@pytest.mark.parametrize(
    "token",
    [
        "A" * 43,  # well formed, nobody's
        "short",
        "x" * 500,
        "..%2F..%2Fetc",
    ],
)
def test_any_other_token_is_a_404(client, monitor, token):
    assert client.get(f"/feeds/monitors/{token}/").status_code == 404
    assert client.get(f"/feeds/teams/{token}/").status_code == 404


def test_a_token_works_only_for_its_own_kind_of_feed_and_live_monitors(
    client, team, monitor
):
    assert client.get(f"/feeds/teams/{monitor.feed_token}/").status_code == 404
    assert client.get(f"/feeds/monitors/{team.feed_token}/").status_code == 404
    monitor.soft_delete(timezone.now())
    assert client.get(path_of(monitor.feed_url)).status_code == 404


def test_every_monitor_and_team_has_its_own_token(team, other_team):
    first, second = make_monitor(team), make_monitor(team)
    tokens = {first.feed_token, second.feed_token, team.feed_token,
              other_team.feed_token}  # fmt: skip
    assert len(tokens) == 4
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{43}", t) for t in tokens)


def test_the_migration_gives_existing_rows_tokens_of_their_own(team, other_team):
    migration = importlib.import_module("monitors.migrations.0011_feed_tokens")
    make_monitor(team), make_monitor(other_team)

    def tokens() -> list[str]:
        return [*Team.objects.values_list("feed_token", flat=True),
                *Monitor.objects.values_list("feed_token", flat=True)]  # fmt: skip

    before = tokens()
    migration.fill_tokens(django_apps, None)
    after = tokens()
    assert len(set(after)) == 4 and not set(after) & set(before)


# ---------------------------------------------------------------- dashboard


def test_the_monitor_page_and_the_team_page_show_their_feed_links(web, team, monitor):
    page = web.get(monitor.get_absolute_url()).content.decode()
    assert f'value="{monitor.feed_url}"' in page
    assert "Make a new feed link" in page
    assert "the current link stops working at once" in page

    page = web.get(reverse("team-members")).content.decode()
    assert f'value="{team.feed_url}"' in page
    assert "Turn feeds off" in page


# ---------------------------------------------------------------- API


def test_the_api_gives_each_monitor_its_absolute_feed_url(api, monitor):
    data = api.get(f"/v2/monitor/{monitor.pk}").json()["data"]
    assert data["feedUrl"] == (
        f"{settings.PUBLIC_BASE_URL}/feeds/monitors/{monitor.feed_token}/"
    )
    listed = api.get("/v2/monitor").json()["data"]
    assert [m["feedUrl"] for m in listed] == [data["feedUrl"]]


def test_the_openapi_document_describes_feed_url(api):
    schema = api.get("/v2/openapi.json").json()
    field = schema["components"]["schemas"]["Monitor"]["properties"]["feedUrl"]
    assert field["format"] == "uri" and field["nullable"] is True
    assert "Pagewatch extension" in field["description"]


@pytest.mark.django_db(transaction=True)
def test_the_firecrawl_sdk_reads_a_monitor_that_carries_feed_url(live_server, api_key):
    sdk = Firecrawl(api_key=api_key, api_url=live_server.url, max_retries=1)
    target = MonitorTarget(type="scrape", urls=["https://example.com/pricing"])
    created = sdk.create_monitor(
        name="Pricing", schedule={"text": "hourly"}, targets=[target]
    )
    fetched = sdk.get_monitor(created.id)
    assert fetched.id == created.id and fetched.name == "Pricing"
    assert [m.id for m in sdk.list_monitors()] == [created.id]
    assert Monitor.objects.get(pk=uuid.UUID(created.id)).feed_token
