"""The dashboard: sign-in, team scoping, every page, htmx fragments, and the
inline validation that must agree with the API word for word."""

from __future__ import annotations

import html
import json
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from checks.dispatch import dispatch_due_monitors
from checks.errors import ErrorKind, plain_error
from checks.models import Check, PageResult, PageState, Snapshot
from checks.pipeline import sources
from monitors import rules
from monitors.dashboard.context import SESSION_KEY
from monitors.editing import create_monitor
from monitors.models import ApiKey, Membership, Monitor, Target, Team
from monitors.rules import curly_quotes
from monitors.templatetags.pagewatch import duration, local
from monitors.wire.monitor import MonitorWriteSerializer
from tests.resets import worker_sends

PASSWORD = "correct-horse-battery-staple"


# ---------------------------------------------------------------- personas


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Real hashing costs about a second per user; these tests are not about it.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def owner(team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def outsider(other_team, django_user_model):
    user = django_user_model.objects.create_user("oscar", "oscar@example.com", PASSWORD)
    Membership.objects.create(team=other_team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def web(client, owner):
    """A signed-in browser session of a member of `team`."""
    client.force_login(owner)
    return client


def make_monitor(team: Team, **overrides) -> Monitor:
    body = {
        "name": "Pricing page",
        "schedule": {"cron": "*/30 * * * *", "timezone": "Europe/Berlin"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
        **overrides,
    }
    serializer = MonitorWriteSerializer(data=body)
    serializer.is_valid(raise_exception=True)
    return create_monitor(team, serializer.validated_data, timezone.now())


@pytest.fixture
def monitor(team) -> Monitor:
    return make_monitor(team)


@pytest.fixture
def other_monitor(other_team) -> Monitor:
    return make_monitor(other_team, name="Globex secret plans")


def make_check(monitor: Monitor, **fields) -> Check:
    now = timezone.now()
    defaults = {
        "trigger": Check.Trigger.MANUAL,
        "status": Check.Status.COMPLETED,
        "started_at": now - timedelta(seconds=42),
        "finished_at": now,
        "summary": {
            "totalPages": 1,
            "same": 0,
            "changed": 1,
            "new": 0,
            "removed": 0,
            "error": 0,
        },
        "actual_credits": 1,
    }
    return Check.objects.create(monitor=monitor, **(defaults | fields))


def make_page(check: Check, before: str | None, after: str, **fields) -> PageResult:
    from checks.content import compare_texts

    target = check.monitor.targets.first()
    previous = Snapshot.store(before) if before is not None else None
    current = fields.pop("current_snapshot", Snapshot.store(after))
    status = fields.pop("status", "changed" if before is not None else "new")
    diff = None
    if before is not None:
        _, _, diff = compare_texts(before, after)
    return PageResult.objects.create(
        check_run=check,
        target_id=target.id,
        url=fields.pop("url", "https://example.com/pricing"),
        status=status,
        previous_snapshot=previous,
        current_snapshot=current,
        diff=diff,
        **fields,
    )


@pytest.fixture
def changed_page(monitor) -> PageResult:
    check = make_check(monitor)
    return make_page(
        check,
        "# Plans\n\nPro costs $19 a month.\n\nContact us.",
        "# Plans\n\nPro costs $24 a month.\n\nContact us.",
        metadata={"title": "Pricing — Example"},
    )


def text_of(response) -> str:
    return html.unescape(response.content.decode())


# ---------------------------------------------------------------- sign-in


def dashboard_urls(monitor: Monitor, check: Check, page: PageResult, key: ApiKey):
    ids = {"pk": monitor.pk}
    check_ids = {"pk": monitor.pk, "check_id": check.pk}
    return [
        reverse("monitor-list"),
        reverse("monitor-create"),
        reverse("monitor-validate-new"),
        reverse("target-row"),
        reverse("schedule-preview"),
        reverse("monitor-detail", kwargs=ids),
        reverse("monitor-edit", kwargs=ids),
        reverse("monitor-validate", kwargs=ids),
        reverse("monitor-toggle", kwargs=ids),
        reverse("monitor-run", kwargs=ids),
        reverse("monitor-delete", kwargs=ids),
        reverse("check-detail", kwargs=check_ids),
        reverse("check-progress", kwargs=check_ids),
        reverse("page-diff", kwargs=check_ids | {"page_id": page.pk}),
        reverse("api-keys"),
        reverse("api-key-revoke", kwargs={"key_id": key.pk}),
        reverse("team-members"),
        reverse("team-switch"),
        reverse("password_change"),
    ]


def test_every_dashboard_page_sends_signed_out_visitors_to_sign_in(
    client, team, changed_page
):
    key, _ = ApiKey.issue(team)
    check = changed_page.check_run
    for url in dashboard_urls(check.monitor, check, changed_page, key):
        for method in (client.get, client.post):
            response = method(url)
            assert response.status_code == 302, url
            assert response["Location"].startswith(reverse("login") + "?next="), url
    assert Monitor.objects.get(pk=check.monitor.pk).is_active  # toggle did nothing


def test_every_description_a_page_points_its_fields_at_is_on_the_page(
    web, team, changed_page
):
    # A screen reader reads nothing for a missing id; axe does not flag it.
    key, _ = ApiKey.issue(team)
    check = changed_page.check_run
    pages = [reverse("password_change"), reverse("monitor-create"), reverse("api-keys")]
    pages += [check.get_absolute_url(), check.monitor.get_absolute_url()]
    for url in pages:
        page = web.get(url).content.decode()
        ids = set(re.findall(r'\bid="([^"]+)"', page))
        for described in re.findall(r'aria-describedby="([^"]*)"', page):
            assert set(described.split()) <= ids, (url, described)


# Routes anyone may open. Everything else must need a session (or, under /v2/,
# an API key — checked by the API's own tests).
PUBLIC_ROUTES = {
    "login",
    "password_reset",
    "password_reset_done",
    "password_reset_confirm",
    "password_reset_complete",
    "admin:login",
    "favicon",  # a redirect to a static file
    "capture",  # a signed, expiring link to one screenshot: the credential
    "invitation-accept",  # the e-mailed link: its single-use token is the credential
    "admin-sign-in",  # the admin's own sign-in, or a redirect to the dashboard's
    "oidc_authentication_init",  # single sign-on: off to the provider and back
    "oidc_authentication_callback",
    "healthz",  # for probes: says which part is down, nothing more
    "metrics",  # behind its own bearer token (METRICS_TOKEN)
    "monitor-feed",  # Atom feeds: the random token in the address is the
    "team-feed",  # credential (tests/test_feeds.py)
}
PUBLIC_PREFIXES = ("v2/", "email/")
SAMPLES = {"uuid": str(uuid.uuid4()), "int": "1", "slug": "x", "str": "x", "path": "x"}


def _walk(patterns, prefix="", namespace=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            ns = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern), ns)
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), f"{namespace}{entry.name or ''}", entry


def _sample_path(route: str) -> str | None:
    """A concrete URL for a route, or None for regex routes with no sample."""
    if route.startswith("^") or "(?P" in route:
        return None

    def fill(match: re.Match) -> str:
        return SAMPLES[match[1] or "str"]

    return "/" + re.sub(r"<(?:(\w+):)?\w+>", fill, route)


def test_every_route_in_the_project_needs_a_session_unless_it_is_public(client, db):
    checked = 0
    for route, name, pattern in _walk(get_resolver().url_patterns):
        if name in PUBLIC_ROUTES or route.startswith(PUBLIC_PREFIXES):
            continue
        exempt = getattr(pattern.callback, "login_required", True) is False
        is_admin = name.startswith("admin:")
        # Only the admin may skip LoginRequiredMiddleware, because it checks
        # staff sessions itself; proven below by requesting its pages.
        assert not exempt or is_admin, f"{route} ({name}) is public by accident"
        path = _sample_path(route)
        if path is None:
            continue
        response = client.get(path)
        logins = (reverse("login"), reverse("admin:login"))
        assert response.status_code == 302, f"{path} answered {response.status_code}"
        assert response["Location"].startswith(logins if is_admin else logins[0]), path
        checked += 1
    assert checked > 20


def test_sign_in_page_signs_a_member_in_and_out(client, owner):
    assert client.get(reverse("login")).status_code == 200
    response = client.post(
        reverse("login"), {"username": "olive", "password": PASSWORD, "next": "/"}
    )
    assert response.status_code == 302
    assert client.get(reverse("monitor-list")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("monitor-list")).status_code == 302


def test_wrong_password_shows_a_plain_message(client, owner):
    response = client.post(reverse("login"), {"username": "olive", "password": "nope"})
    assert "did not match" in text_of(response)


def test_password_reset_mails_a_link(client, owner, queued_resets):
    response = client.post(reverse("password_reset"), {"email": "olive@example.com"})
    assert response.status_code == 302
    [message] = worker_sends(queued_resets)
    assert "/accounts/reset/" in message.body
    assert "\n" not in message.subject


def test_the_password_reset_link_starts_at_the_public_base_url(
    client, owner, settings, queued_resets
):
    # Not at the host the request came in on (an internal name, or http
    # behind a TLS proxy): the link must work from the reader's mailbox.
    settings.PUBLIC_BASE_URL = "https://pagewatch.example.org"
    client.post(reverse("password_reset"), {"email": "olive@example.com"})
    [message] = worker_sends(queued_resets)
    assert "\nhttps://pagewatch.example.org/accounts/reset/" in message.body
    assert "testserver" not in message.body


def test_a_user_in_no_team_sees_a_friendly_page(client, django_user_model):
    loner = django_user_model.objects.create_user("lonely", password=PASSWORD)
    client.force_login(loner)
    response = client.get(reverse("monitor-list"))
    assert response.status_code == 403
    assert "not in a team yet" in text_of(response)


# ---------------------------------------------------------------- team scoping


def test_another_teams_objects_answer_404(web, other_monitor):
    check = make_check(other_monitor)
    page = make_page(check, "a", "b")
    ids = {"pk": other_monitor.pk}
    check_ids = ids | {"check_id": check.pk}
    gets = [
        reverse("monitor-detail", kwargs=ids),
        reverse("monitor-edit", kwargs=ids),
        reverse("monitor-delete", kwargs=ids),
        reverse("check-detail", kwargs=check_ids),
        reverse("page-diff", kwargs=check_ids | {"page_id": page.pk}),
    ]
    posts = [
        reverse("monitor-toggle", kwargs=ids),
        reverse("monitor-run", kwargs=ids),
        reverse("monitor-delete", kwargs=ids),
        reverse("monitor-edit", kwargs=ids),
        reverse("monitor-validate", kwargs=ids),
    ]
    for url in gets:
        assert web.get(url).status_code == 404, url
    assert (
        web.get(
            reverse("check-progress", kwargs=check_ids), HTTP_HX_REQUEST="true"
        ).status_code
        == 404
    )
    for url in posts:
        assert web.post(url, {"status": "paused"}).status_code == 404, url
    other_monitor.refresh_from_db()
    assert other_monitor.is_active and other_monitor.deleted_at is None
    assert Check.objects.filter(monitor=other_monitor).count() == 1


def test_a_check_of_one_monitor_is_not_found_under_another(web, team, changed_page):
    sibling = make_monitor(team, name="Sibling")
    url = reverse(
        "check-detail", kwargs={"pk": sibling.pk, "check_id": changed_page.check_run.pk}
    )
    assert web.get(url).status_code == 404


def test_another_teams_api_key_cannot_be_revoked(web, other_team):
    key, _ = ApiKey.issue(other_team)
    url = reverse("api-key-revoke", kwargs={"key_id": key.pk})
    assert web.post(url).status_code == 404
    key.refresh_from_db()
    assert key.is_active


def test_the_list_only_shows_the_current_teams_monitors(web, monitor, other_monitor):
    page = text_of(web.get(reverse("monitor-list")))
    assert monitor.name in page
    assert other_monitor.name not in page


def test_people_in_two_teams_switch_between_them(web, owner, other_team, monitor):
    Membership.objects.create(team=other_team, user=owner)
    theirs = make_monitor(other_team, name="Globex launch page")
    page = text_of(web.get(reverse("monitor-list")))
    assert 'name="team"' in page and monitor.name in page and theirs.name not in page

    response = web.post(reverse("team-switch"), {"team": other_team.pk})
    assert response.status_code == 302
    assert web.session[SESSION_KEY] == other_team.pk
    page = text_of(web.get(reverse("monitor-list")))
    assert theirs.name in page and monitor.name not in page
    assert web.get(monitor.get_absolute_url()).status_code == 404


def test_switching_to_a_team_you_are_not_in_changes_nothing(web, team, other_team):
    web.post(reverse("team-switch"), {"team": other_team.pk})
    assert web.session.get(SESSION_KEY) is None
    web.post(reverse("team-switch"), {"team": "not-a-number"})
    assert web.session.get(SESSION_KEY) is None


def test_a_removed_membership_stops_access_even_if_the_session_remembers_it(
    web, owner, other_team
):
    membership = Membership.objects.create(team=other_team, user=owner)
    theirs = make_monitor(other_team, name="Globex launch page")
    web.post(reverse("team-switch"), {"team": other_team.pk})
    membership.delete()
    assert web.get(theirs.get_absolute_url()).status_code == 404


# ---------------------------------------------------------------- monitor list


def test_list_shows_schedule_in_words_next_run_and_last_check(web, monitor):
    monitor.last_check_summary = {
        "totalPages": 5, "same": 3, "changed": 1, "new": 0, "removed": 0, "error": 1,
    }  # fmt: skip
    # Not left to the clock: a minute before a half hour, the next run of
    # */30 would be "in less than a minute".
    monitor.next_run_at = timezone.now() + timedelta(minutes=20, seconds=30)
    monitor.save()
    make_check(monitor)
    page = text_of(web.get(reverse("monitor-list")))
    assert "Every 30 minutes, Europe/Berlin" in page
    assert "*/30" not in page  # no cron for a schedule said in words
    # The full time is said to screen readers too, not only hovered.
    assert re.search(
        r"<time datetime=\"[^\"]+\" title=\"([^\"]+CES?T)\">in \d+ minutes?"
        r"<span class=\"visually-hidden\"> \(\1\)</span></time>",
        page,
    )
    assert "1 changed" in page and "1 failed" in page and "3 unchanged" in page
    assert 'class="strip"' in page and "Completed" in page


def test_the_list_costs_the_same_few_queries_however_many_monitors(
    web, team, django_assert_max_num_queries
):
    for number in range(25):
        monitor = make_monitor(team, name=f"Monitor {number}")
        make_check(monitor)
        make_check(monitor, status="failed")
    # session, user, teams, count, page, targets, recent checks (one window query)
    # 9: one is the second factor's (teams.second_factor._state); 11 with the
    # page's tags and the team's tags for the tag selector.
    with django_assert_max_num_queries(11):
        response = web.get(reverse("monitor-list"))
    assert text_of(response).count('class="strip"') == 25


@pytest.mark.parametrize("failed", [1, 12, 60])
def test_a_check_page_names_failed_pages_by_their_last_titles_in_a_few_queries(
    web, team, failed, django_assert_max_num_queries
):
    """The title each failed or removed page last had comes from its baseline
    within the list's own query, never one lookup per row."""
    monitor = make_monitor(team)
    target = monitor.targets.get()
    check = make_check(monitor)
    for number in range(failed):
        url = f"https://example.com/café-{number}"  # hashed alike in SQL
        PageState.objects.create(
            monitor=monitor, target_id=target.pk, url=url,
            url_hash=PageState.hash_url(url), metadata={"title": f"Plan {number}"},
        )  # fmt: skip
        PageResult.objects.create(
            check_run=check, target_id=target.pk, url=url,
            status="error" if number % 2 == 0 else "removed",
        )  # fmt: skip

    # session, user, teams, second factor, check, monitor with its targets,
    # page counts, judged?, the page of results, ...: as many for 1 as for 60.
    with django_assert_max_num_queries(11):
        page = text_of(web.get(check.get_absolute_url()))

    assert all(f"Plan {number}" in page for number in range(failed))
    assert "https://example.com/page-0" not in re.findall(
        r'class="row-title"[^>]*>([^<]+)<', page
    )


def test_each_failed_pages_last_title_is_one_probe_of_the_baselines_unique_index(
    team,
):
    """Looked up by the URL's hash, the column the unique index holds, not by
    the URL: else each failed row of a crawl reads every baseline of its
    target (thousands when a large site is down)."""
    from django.db import connection

    monitor = make_monitor(team)
    pages = make_check(monitor).pages.with_last_titles()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
        plan = pages.explain()

    lines = plan.splitlines()
    [at] = [n for n, line in enumerate(lines) if "checks_pagestate" in line]
    # SQLite names the columns it searches on the line itself; PostgreSQL
    # on the Index Cond line under it.
    searched = lines[at] if connection.vendor == "sqlite" else lines[at + 1]
    assert "url_hash" in searched, plan


def test_list_offers_a_helpful_first_step_when_empty(web):
    page = text_of(web.get(reverse("monitor-list")))
    assert "Nothing is being watched yet" in page
    assert reverse("monitor-create") in page


def test_list_search_and_status_filter(web, team, monitor):
    paused = make_monitor(
        team,
        name="Terms of service",
        targets=[{"type": "scrape", "urls": ["https://example.com/terms"]}],
    )
    paused.pause()
    paused.save()
    crawl = make_monitor(
        team,
        name="Blog",
        targets=[{"type": "crawl", "url": "https://blog.example.org/"}],
    )

    def names(response):
        return re.findall(r'class="row-title"[^>]*>([^<]+)<', text_of(response))

    assert names(web.get("/", {"q": "terms"})) == ["Terms of service"]
    assert names(web.get("/", {"q": "blog.example"})) == ["Blog"]
    assert names(web.get("/", {"q": "example.com/pricing"})) == [monitor.name]
    assert names(web.get("/", {"status": "paused"})) == ["Terms of service"]
    assert set(names(web.get("/", {"status": "active"}))) == {crawl.name, monitor.name}
    assert "No monitors match" in text_of(web.get("/", {"q": "nothing like this"}))


def checks_in_order(monitor: Monitor, *statuses: str) -> None:
    """Checks of `monitor`, oldest first, a minute apart."""
    start = timezone.now() - timedelta(hours=1)
    for n, status in enumerate(statuses):
        check = make_check(monitor, status=status)
        Check.objects.filter(pk=check.pk).update(
            created_at=start + timedelta(minutes=n)
        )


def test_the_failing_filter_lists_monitors_whose_last_check_failed(
    web, team, django_assert_max_num_queries
):
    def names(response):
        return sorted(re.findall(r'class="row-title"[^>]*>([^<]+)<', text_of(response)))

    checks_in_order(make_monitor(team, name="Down"), "completed", "failed")
    checks_in_order(make_monitor(team, name="Recovered"), "failed", "completed")
    # Skipped, or under way: the last check that looked at pages still failed.
    checks_in_order(make_monitor(team, name="Skipped"), "failed", "skipped_no_credits")
    checks_in_order(make_monitor(team, name="Rerun"), "failed", "queued")
    checks_in_order(make_monitor(team, name="Partly"), "failed", "partial")
    make_monitor(team, name="Never run")
    paused = make_monitor(team, name="Paused down")
    checks_in_order(paused, "failed")
    paused.pause()
    paused.save()

    with django_assert_max_num_queries(11):
        failing = web.get("/", {"failing": "1"})
    assert names(failing) == ["Down", "Paused down", "Rerun", "Skipped"]
    assert 'id="id_failing" name="failing" value="1" checked' in text_of(failing)
    assert names(web.get("/", {"failing": "1", "status": "active"})) == [
        "Down",
        "Rerun",
        "Skipped",
    ]
    assert len(names(web.get("/"))) == 7  # off, every monitor
    fragment = web.get(
        "/", {"failing": "1"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results"
    )
    assert text_of(fragment).lstrip().startswith('<section id="results"')
    assert "4 monitors found." in fragment["HX-Trigger"]


FAILED_SUMMARY = {
    "totalPages": 3, "same": 2, "changed": 0, "new": 0, "removed": 0, "error": 1,
}  # fmt: skip


def failed_then(monitor: Monitor, *after: str) -> Check:
    """A monitor whose last check that looked at pages failed (having read some
    of them), followed by checks of `after` statuses; the monitor's fields are
    as the runner leaves them. Returns the failed check."""
    checks_in_order(monitor, "completed", "failed", *after)
    failed = Check.objects.get(monitor=monitor, status="failed")
    Check.objects.filter(pk=failed.pk).update(summary=FAILED_SUMMARY)
    newest = Check.objects.filter(monitor=monitor).order_by("-created_at").first()
    in_flight = newest.status in Check.IN_FLIGHT
    Monitor.objects.filter(pk=monitor.pk).update(
        last_check_summary=FAILED_SUMMARY,
        current_check_id=newest.pk if in_flight else None,
    )
    return failed


def row_of(page: str, monitor: Monitor) -> str:
    return page.split(f'id="monitor-{monitor.pk}"', 1)[1].split("</tr>", 1)[0]


def test_a_failing_monitor_says_check_failed_while_its_next_check_runs(web, team):
    """The failing filter lists it (its last check that looked at pages
    failed), so its row says so, and that another check is under way, rather
    than showing the failed check's counts as if all were well."""
    monitor = make_monitor(team, name="Rerun")
    failed = failed_then(monitor, "running")

    for filters in ({"failing": "1"}, {}):
        row = row_of(text_of(web.get("/", filters)), monitor)

        assert "Check failed" in row, filters
        assert f'href="{failed.get_absolute_url()}"' in row
        assert "New check under way" in row
        assert "2 unchanged" not in row and "unchanged" not in row


def test_a_failing_monitor_says_check_failed_after_many_skipped_checks(web, team):
    """A long check makes the slots after it skip (overlap): more of them than
    the row's strip holds still leave the monitor failing, in the list and in
    its row alike."""
    monitor = make_monitor(team, name="Long crawl")
    failed = failed_then(monitor, *["skipped_overlap"] * 20)

    page = text_of(web.get("/", {"failing": "1"}))

    row = row_of(page, monitor)
    assert "Check failed" in row
    assert f'href="{failed.get_absolute_url()}"' in row
    assert "New check under way" not in row


def test_a_row_says_check_failed_exactly_when_the_failing_filter_lists_it(web, team):
    cases = {
        "Down": ("completed", "failed"),
        "Recovered": ("failed", "completed"),
        "Skipped": ("failed", "skipped_no_credits"),
        "Rerun": ("failed", "running"),
        "Queued": ("failed", "queued"),
        "Partly": ("failed", "partial"),
        "Recovering": ("failed", "completed", "running"),
    }
    monitors = {}
    for name, statuses in cases.items():
        monitors[name] = make_monitor(team, name=name)
        checks_in_order(monitors[name], *statuses)

    listed = re.findall(
        r'class="row-title"[^>]*>([^<]+)<', text_of(web.get("/", {"failing": "1"}))
    )
    page = text_of(web.get("/"))
    said_failed = [
        name for name, m in monitors.items() if "Check failed" in row_of(page, m)
    ]
    expected = ["Down", "Queued", "Rerun", "Skipped"]
    assert sorted(listed) == sorted(said_failed) == expected


def test_the_failing_filter_says_so_when_nothing_is_failing(web, team):
    checks_in_order(make_monitor(team, name="Fine"), "failed", "completed")
    page = text_of(web.get("/", {"failing": "1"}))
    assert "Nothing is failing" in page and "No monitors match" not in page
    assert "The last check of every monitor worked, or has not run yet." in page
    page = text_of(web.get("/", {"failing": "1", "status": "paused"}))
    assert "The last check of every “Paused” monitor worked" in page
    page = text_of(web.get("/", {"failing": "1", "q": "pricing"}))
    assert "Nothing matches “pricing” among failing monitors." in page
    page = text_of(web.get("/", {"failing": "1", "q": "x", "status": "active"}))
    assert "Nothing matches “x” among failing “Active” monitors." in page
    page = text_of(web.get("/", {"q": "x", "status": "paused"}))
    assert "Nothing matches “x” among “Paused” monitors." in page


def test_list_paginates(web, team):
    for number in range(27):
        make_monitor(team, name=f"Monitor {number:02d}")
    first = text_of(web.get("/"))
    assert (
        "Page 1 of 2" in first and "Monitor 26" in first and "Monitor 01" not in first
    )
    link = re.search(r'href="([^"]*)" rel="next"', first)[1]
    assert link == "?page=2"
    second = text_of(web.get("/" + link))
    assert "Monitor 01" in second and "Monitor 00" in second


def test_htmx_search_gets_only_the_results_fragment(web, monitor):
    response = web.get(
        "/", {"q": "pricing"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="results"
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="results"')
    assert "<html" not in body and monitor.name in body
    assert "1 monitor found." in response["HX-Trigger"]


# ---------------------------------------------------------------- pause / resume


def test_pausing_without_javascript_clears_next_run_and_returns_to_the_list(
    web, monitor
):
    url = reverse("monitor-toggle", kwargs={"pk": monitor.pk})
    response = web.post(url, {"status": "paused", "next": "/?q=pricing"})
    assert response.status_code == 302 and response["Location"] == "/?q=pricing"
    monitor.refresh_from_db()
    assert monitor.status == "paused" and monitor.next_run_at is None


def test_resuming_schedules_the_next_run(web, monitor):
    monitor.pause()
    monitor.save()
    web.post(reverse("monitor-toggle", kwargs={"pk": monitor.pk}), {"status": "active"})
    monitor.refresh_from_db()
    assert monitor.is_active and monitor.next_run_at > timezone.now()


def test_toggle_refuses_to_redirect_elsewhere(web, monitor):
    url = reverse("monitor-toggle", kwargs={"pk": monitor.pk})
    response = web.post(url, {"status": "paused", "next": "https://evil.example/"})
    assert response["Location"] == reverse("monitor-list")


def test_htmx_toggle_swaps_the_row_and_announces_it(web, monitor):
    response = web.post(
        reverse("monitor-toggle", kwargs={"pk": monitor.pk}),
        {"status": "paused"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/?status=active",
    )
    body = response.content.decode()
    assert body.lstrip().startswith(f'<tr id="monitor-{monitor.pk}"')
    assert "Resume" in body and 'value="/?status=active"' in body
    assert "paused" in response["HX-Trigger"]
    monitor.refresh_from_db()
    assert not monitor.is_active


def test_double_click_on_pause_leaves_it_paused(web, monitor):
    url = reverse("monitor-toggle", kwargs={"pk": monitor.pk})
    web.post(url, {"status": "paused"})
    web.post(url, {"status": "paused"})
    monitor.refresh_from_db()
    assert monitor.status == "paused"


# ---------------------------------------------------------------- create / edit


def scrape_form(**overrides) -> dict:
    data = {
        "name": "Pricing",
        "schedule": "every 30 minutes",
        "timezone": "Europe/Berlin",
        "goal": "",
        "judge": "auto",
        "retention_days": "",
        "webhook_url": "",
        "webhook_events": ["monitor.page", "monitor.check.completed"],
        "target": ["t0000aaaa"],
        "t0000aaaa-type": "scrape",
        "t0000aaaa-urls": "https://example.com/pricing\n\nhttps://example.com/terms\n",
        "t0000aaaa-only_main_content": "on",
    }
    return data | overrides


def test_staff_choose_how_pages_are_loaded_in_plain_words(web, team, settings):
    settings.BROWSER_EXECUTABLE = "/nowhere/chromium"
    form = web.get(reverse("monitor-create")).content.decode()

    response = web.post(reverse("monitor-create"), scrape_form(fetch_with="browser"))
    monitor = Monitor.objects.get(team=team)
    detail = web.get(monitor.get_absolute_url()).content.decode()

    assert "How pages are loaded" in form
    assert "Always in a real browser" in form and "fetchWith" not in form
    assert "No browser is installed on this server" in form
    assert response.status_code == 302
    assert monitor.fetch_with == Monitor.FetchWith.BROWSER
    assert "Pages loaded" in detail and "Always in a real browser" in detail
    assert 'data-unavailable="browser"' in detail


def test_a_monitors_page_says_in_plain_words_what_this_server_cannot_do(
    web, team, settings
):
    settings.LLM_BASE_URL = ""
    settings.CRAWL_ALLOW_IGNORE_ROBOTS = False
    monitor = make_monitor(
        team,
        goal="Tell me when a price changes",
        targets=[
            {
                "type": "scrape",
                "urls": ["https://example.com/pricing"],
                "scrapeOptions": {"formats": [{"type": "json", "prompt": "price"}]},
            },
            {
                "type": "crawl",
                "url": "https://example.com/",
                "crawlOptions": {"ignoreRobotsTxt": True},
            },
        ],
    )

    page = web.get(monitor.get_absolute_url()).content.decode()
    settings.LLM_BASE_URL = "http://llm.internal/v1"
    settings.CRAWL_ALLOW_IGNORE_ROBOTS = True
    once_set_up = web.get(monitor.get_absolute_url()).content.decode()

    shown = re.findall(r'data-unavailable="(\w+)"', page)
    assert shown == ["extraction", "judge", "robots"]
    assert "Facts cannot be picked out of these pages yet." in page
    assert "Changes are not judged against the goal yet." in page
    assert "rules for automated visitors are followed" in page
    for api_word in ("ignoreRobotsTxt", "crawlOptions", "json format"):
        assert api_word not in page
    assert "data-unavailable" not in once_set_up


def test_creating_a_monitor_saves_it_like_the_api_would(web, team):
    data = scrape_form(
        goal="Tell me when a price changes",
        retention_days="90",
        webhook_url="https://hooks.example.com/pw",
        webhook_headers="Authorization: Bearer s3cret",
        webhook_metadata="team: marketing",
        webhook_events=["monitor.check.completed"],
        email_enabled="on",
        email_recipients="Alerts@Example.com, olive@example.com",
        email_include_diffs="on",
        **{"t0000aaaa-mobile": "on", "t0000aaaa-exclude_tags": "nav, .cookie"},
    )
    response = web.post(reverse("monitor-create"), data)
    monitor = Monitor.objects.get(team=team)
    assert response.status_code == 302
    assert response["Location"] == monitor.get_absolute_url()
    assert monitor.name == "Pricing"
    assert (monitor.schedule_cron, monitor.schedule_timezone) == (
        "*/30 * * * *",
        "Europe/Berlin",
    )
    assert monitor.next_run_at is not None
    assert monitor.goal == "Tell me when a price changes" and monitor.judge_enabled
    assert monitor.retention_days == 90
    assert monitor.webhook == {
        "url": "https://hooks.example.com/pw",
        "headers": {"Authorization": "Bearer s3cret"},
        "metadata": {"team": "marketing"},
        "events": ["monitor.check.completed"],
    }
    assert monitor.notification["email"] == {
        "enabled": True,
        "recipients": ["alerts@example.com", "olive@example.com"],
        "includeDiffs": True,
    }
    (target,) = monitor.targets.all()
    assert target.type == "scrape"
    assert target.urls == ["https://example.com/pricing", "https://example.com/terms"]
    assert target.scrape_options == {"mobile": True, "excludeTags": ["nav", ".cookie"]}


def test_crawl_and_search_targets_from_the_form(web, team):
    data = scrape_form(
        goal="New articles about Acme",
        target=["t0000aaaa", "t0000bbbb"],
        **{
            "t0000aaaa-type": "crawl",
            "t0000aaaa-url": "https://blog.example.org/",
            "t0000aaaa-limit": "50",
            "t0000aaaa-depth": "2",
            "t0000aaaa-include_paths": "^/posts/",
            "t0000aaaa-only_main_content": "",
            "t0000bbbb-type": "search",
            "t0000bbbb-queries": "acme corp\nacme launch",
            "t0000bbbb-search_window": "7d",
            "t0000bbbb-max_results": "20",
            "t0000bbbb-include_domains": "news.example.com example.org",
        },
    )
    response = web.post(reverse("monitor-create"), data)
    assert response.status_code == 302, text_of(response)
    crawl, search = Monitor.objects.get(team=team).targets.all()
    assert crawl.url == "https://blog.example.org/"
    assert crawl.crawl_options == {
        "limit": 50,
        "maxDiscoveryDepth": 2,
        "includePaths": ["^/posts/"],
    }
    assert crawl.scrape_options == {"onlyMainContent": False}
    assert search.queries == ["acme corp", "acme launch"]
    assert (search.search_window, search.max_results) == ("7d", 20)
    assert search.include_domains == ["news.example.com", "example.org"]


def test_an_invalid_form_saves_nothing_and_says_what_to_fix(web, team):
    data = scrape_form(
        name="",
        schedule="every 7 minutes",
        **{"t0000aaaa-urls": "ftp://example.com/x", "t0000aaaa-timeout": "soon"},
    )
    response = web.post(reverse("monitor-create"), data)
    assert response.status_code == 400
    assert not Monitor.objects.exists()
    page = text_of(response)
    assert "Please fix 4 problems" in page
    assert re.search(
        r'id="err-name" class="field-error"><p>Give the monitor a name.', page
    )
    assert "Checks cannot run every 7 minutes" in page
    assert "“ftp://example.com/x”: Only http:// and https:// URLs are allowed." in page
    assert re.search(
        r'id="err-t0000aaaa-timeout" class="field-error"><p>Enter a whole number of '
        r"milliseconds from 1,000 to 300,000",
        page,
    )
    name_input = re.search(r'<input[^>]*name="name"[^>]*>', page)[0]
    assert 'aria-invalid="true"' in name_input
    assert 'aria-describedby="err-name help-name"' in name_input
    # What was typed is kept.
    assert "ftp://example.com/x</textarea>" in page
    # The folded section holding the time-out opens, without JavaScript too.
    folded = r'<details class="more" open>\s*<summary>Advanced page options'
    assert re.search(folded, page)
    # The summary lists the problems in the order the page shows the fields.
    summary = re.search(r'id="error-summary".*?</ul>', page, re.DOTALL)[0]
    assert re.findall(r'href="#([\w-]+)"', summary) == [
        "id_name",
        "id_t0000aaaa-urls",
        "id_t0000aaaa-timeout",
        "id_schedule",
    ]


@pytest.mark.parametrize(
    ("changes", "slot", "message"),
    [
        (
            {
                "target": ["t0000bbbb"],
                "t0000bbbb-type": "search",
                "t0000bbbb-queries": "acme",
            },
            "goal",
            "A web search needs a goal that says what you are looking for",
        ),
        ({"judge": "on"}, "judge", "Write a goal for the AI to judge changes against"),
        ({"schedule": "every banana"}, "schedule", rules.SCHEDULE_UNREADABLE_PLAIN),
        (
            {"schedule": "* * * * *"},
            "schedule",
            "Checks can run at most once every 5 minutes: choose a longer gap.",
        ),
        ({"schedule": "61 * * * *"}, "schedule", rules.SCHEDULE_UNREADABLE_PLAIN),
        ({"schedule": "0 9 * *"}, "schedule", rules.SCHEDULE_UNREADABLE_PLAIN),
        ({"schedule": "@daily"}, "schedule", rules.SCHEDULE_UNREADABLE_PLAIN),
        (
            {"timezone": "Mars/Olympus"},
            "schedule",
            "“Mars/Olympus” is not a time zone we know: pick one from the list.",
        ),
    ],
)
def test_inline_validation_shows_the_error_next_to_its_field(
    web, changes, slot, message
):
    touched = ",".join(k for k in changes if k != "target") or "name"
    response = web.post(
        reverse("monitor-validate-new"),
        scrape_form(**changes) | {"_touched": touched},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    body = text_of(response)
    assert message in error_slot_text(body, slot), body


def test_never_a_browser_for_a_page_that_waits_is_refused_inline(web):
    response = web.post(
        reverse("monitor-validate-new"),
        scrape_form(fetch_with="http", **{"t0000aaaa-wait_for": "2000"})
        | {"_touched": "t0000aaaa-wait_for,fetch_with"},
        HTTP_HX_REQUEST="true",
    )

    assert "only a browser can do that" in error_slot_text(
        text_of(response), "fetch_with"
    )


def error_slot_text(body: str, slot: str) -> str:
    slot_html = rf'<div id="err-{slot}" class="field-error"[^>]*>(.*?)</div>'
    match = re.search(slot_html, body)
    assert match, body
    return match[1]


def schedule_slot_controls(body: str) -> list[str]:
    match = re.search(r'<div id="err-schedule" class="field-error"([^>]*)>', body)
    assert match, body
    named = re.search(r'data-controls="([^"]*)"', match[1])
    return named[1].split() if named else []


MARS = "“Mars/Olympus” is not a time zone we know: pick one from the list."


@pytest.mark.parametrize(
    ("changes", "messages", "controls"),
    [
        (
            {"schedule": "hourly", "timezone": "Mars/Olympus"},
            [MARS],
            ["id_timezone"],
        ),
        (
            {"schedule": "every 3 fortnights", "timezone": "Mars/Olympus"},
            [MARS, rules.SCHEDULE_UNREADABLE_PLAIN],
            ["id_schedule", "id_timezone"],
        ),
        (
            {"schedule": "every 3 fortnights", "timezone": "Europe/Berlin"},
            [rules.SCHEDULE_UNREADABLE_PLAIN],
            ["id_schedule"],
        ),
    ],
)
def test_a_schedule_error_names_the_control_at_fault(web, changes, messages, controls):
    response = web.post(
        reverse("monitor-validate-new"),
        scrape_form(**changes) | {"_touched": "schedule,timezone"},
        HTTP_HX_REQUEST="true",
    )
    body = text_of(response)
    shown = error_slot_text(body, "schedule")
    assert all(message in shown for message in messages), shown
    assert shown.count("<p>") == len(messages)
    assert schedule_slot_controls(body) == controls


def test_a_submitted_form_with_a_bad_time_zone_marks_the_zone_not_the_phrase(web):
    response = web.post(
        reverse("monitor-create"),
        scrape_form(schedule="hourly", timezone="Mars/Olympus"),
    )
    assert response.status_code == 400  # the form again, with its errors
    assert not Monitor.objects.exists()
    body = response.content.decode()
    zone = re.search(r'<input[^>]*id="id_timezone"[^>]*>', body)[0]
    phrase = re.search(r'<input[^>]*id="id_schedule"[^>]*>', body)[0]
    assert 'aria-invalid="true"' in zone
    assert "aria-invalid" not in phrase
    assert schedule_slot_controls(body) == ["id_timezone"]


def test_a_search_target_without_a_goal_may_opt_out_of_judging(web, team):
    data = scrape_form(
        target=["t0000bbbb"], judge="off",
        **{"t0000bbbb-type": "search", "t0000bbbb-queries": "acme"},
    )  # fmt: skip
    assert web.post(reverse("monitor-create"), data).status_code == 302
    assert Monitor.objects.get(team=team).judge_enabled is False


def test_inline_validation_only_shows_fields_people_touched(web):
    data = scrape_form(name="", schedule="every banana") | {"_touched": "schedule"}
    body = text_of(
        web.post(reverse("monitor-validate-new"), data, HTTP_HX_REQUEST="true")
    )
    assert '<div id="err-name" class="field-error" hx-swap-oob="true"></div>' in body
    assert rules.SCHEDULE_UNREADABLE_PLAIN in body
    # Every slot of the form is in the answer, so fixed errors disappear.
    assert 'id="err-t0000aaaa-urls"' in body and 'id="err-webhook_url"' in body


def test_enter_in_a_field_saves_rather_than_removing_a_target(web):
    page = web.get(reverse("monitor-create")).content.decode()
    form = page[page.index('<form method="post" novalidate class="monitor-form"') :]
    first_button = re.search(r"<button[^>]*>[^<]*", form)[0]
    assert 'type="submit"' in first_button and "Save" in first_button
    assert "name=" not in first_button


def test_no_javascript_add_and_remove_target_rows(web):
    response = web.post(reverse("monitor-create"), scrape_form(add_target="crawl"))
    page = text_of(response)
    assert response.status_code == 200 and not Monitor.objects.exists()
    assert page.count('name="target"') == 2 and "Start address" in page
    assert "This field may not be blank" not in page  # adding is not submitting

    response = web.post(
        reverse("monitor-create"), scrape_form(remove_target="t0000aaaa")
    )
    assert text_of(response).count('name="target"') == 0


def test_new_target_row_fragment(web):
    response = web.get(
        reverse("target-row"), {"add_target": "search"}, HTTP_HX_REQUEST="true"
    )
    body = text_of(response)
    assert body.lstrip().startswith('<fieldset class="target target-search"')
    assert "Search for" in body and "Published within" in body
    key = re.search(r'name="target" value="(t[0-9a-f]+)"', body)[1]
    assert f'name="{key}-queries"' in body


@pytest.mark.parametrize(
    ("kind", "notice"),
    [
        ("crawl", None),
        ("search", "no web search service is set up for this Pagewatch yet"),
        ("scrape", None),
    ],
)
def test_a_target_row_says_when_checks_skip_its_kind(web, kind, notice):
    body = text_of(
        web.get(reverse("target-row"), {"add_target": kind}, HTTP_HX_REQUEST="true")
    )
    if notice is None:
        assert "are not run" not in body
    else:
        assert notice in body


@time_machine.travel(datetime(2026, 3, 2, 10, 7, tzinfo=UTC), tick=False)
def test_schedule_preview_says_when_it_will_run(web):
    response = web.get(
        reverse("schedule-preview"),
        {"schedule": "every 30 minutes", "timezone": "Europe/Berlin"},
        HTTP_HX_REQUEST="true",
    )
    assert text_of(response).strip() == (
        '<span aria-hidden="true">→</span> Every 30 minutes'
        " · next: 11:30, 12:00, 12:30 Europe/Berlin time"
    )
    bad = web.get(reverse("schedule-preview"), {"schedule": "*/2 * * * *"})
    assert "Not a schedule we can use yet." in text_of(bad)


def test_saving_the_form_as_a_slot_comes_due_keeps_that_slots_check(web, team):
    with time_machine.travel(datetime(2026, 3, 2, 11, 50, tzinfo=UTC), tick=False):
        monitor = make_monitor(team)
    slot = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert monitor.next_run_at == slot

    # Saved 5 s after the slot, within its spread delay: not dispatched yet.
    with time_machine.travel(slot + timedelta(seconds=5), tick=False):
        response = web.post(
            reverse("monitor-edit", kwargs={"pk": monitor.pk}),
            scrape_form(name="Renamed"),
        )
    assert response.status_code == 302, text_of(response)

    monitor.refresh_from_db()
    assert (monitor.name, monitor.next_run_at) == ("Renamed", slot)
    assert dispatch_due_monitors(slot + timedelta(seconds=31)) == 1
    assert Check.objects.get(monitor=monitor).scheduled_for == slot


def test_a_run_the_scheduler_has_not_started_says_it_waits_not_ago(web, team):
    with time_machine.travel(datetime(2026, 3, 2, 11, 50, tzinfo=UTC), tick=False):
        monitor = make_monitor(team)
    # The scheduler was down: the 12:00 run is two hours overdue.
    with time_machine.travel(datetime(2026, 3, 2, 14, 0, tzinfo=UTC), tick=False):
        listed = text_of(web.get(reverse("monitor-list")))
        detail = text_of(web.get(reverse("monitor-detail", kwargs={"pk": monitor.pk})))

    assert (
        "waiting to start (due 2 hours ago)"
        '<span class="visually-hidden"> (Mon 02 Mar 2026, 13:00 CET)</span></time>'
    ) in listed
    assert "waiting to start (due 2 hours ago)</time>" in detail
    assert "(Mon 02 Mar 2026, 13:00 CET)" in detail

    # Within the scheduler's usual few seconds it is simply due.
    with time_machine.travel(datetime(2026, 3, 2, 12, 0, 20, tzinfo=UTC), tick=False):
        listed = text_of(web.get(reverse("monitor-list")))
    assert '>just now<span class="visually-hidden"> (' in listed


# 02:10 summer time in Berlin, 20 minutes before autumn repeats the hour.
@time_machine.travel(datetime(2026, 10, 25, 0, 10, tzinfo=UTC), tick=False)
def test_schedule_preview_names_the_clock_when_a_time_comes_twice(web):
    response = web.get(
        reverse("schedule-preview"),
        {"schedule": "every 30 minutes", "timezone": "Europe/Berlin"},
    )

    assert text_of(response).strip() == (
        '<span aria-hidden="true">→</span> Every 30 minutes'
        " · next: 02:30 CEST, 02:00 CET, 02:30 CET Europe/Berlin time"
    )


@time_machine.travel(datetime(2026, 3, 2, 10, 7, tzinfo=UTC), tick=False)
def test_schedule_preview_describes_a_typed_cron_in_words(web):
    response = web.get(
        reverse("schedule-preview"), {"schedule": "0 9 1 * *", "timezone": "UTC"}
    )

    assert text_of(response).strip() == (
        '<span aria-hidden="true">→</span> Monthly on day 1 at 09:00'
        " · next: Wed 01 Apr 09:00, Fri 01 May 09:00, Mon 01 Jun 09:00 UTC time"
    )


@time_machine.travel(datetime(2026, 3, 2, 10, 7, tzinfo=UTC), tick=False)
def test_schedule_preview_calls_a_schedule_without_words_custom(web):
    response = web.get(
        reverse("schedule-preview"),
        {"schedule": "0 0,6,12,18,21 * * *", "timezone": "UTC"},
    )

    assert text_of(response).strip() == (
        '<span aria-hidden="true">→</span> Custom schedule'
        " · next: 12:00, 18:00, 21:00 UTC time"
    )


@pytest.mark.parametrize(
    ("schedule", "zone", "lead"),
    [
        ("every banana", "UTC", "Not a schedule we can use yet."),
        ("0 9 * *", "UTC", "Not a schedule we can use yet."),
        ("@daily", "UTC", "Not a schedule we can use yet."),
        ("61 * * * *", "UTC", "Not a schedule we can use yet."),
        ("* * * * *", "UTC", "Not a schedule we can use yet."),
        ("hourly", "Mars/Olympus", "Not a time zone we know yet."),
    ],
)
def test_schedule_preview_says_which_box_is_wrong_leaving_why_to_its_error(
    web, schedule, zone, lead
):
    # The reason is the field's own error, shown right beside the preview.
    response = web.get(
        reverse("schedule-preview"), {"schedule": schedule, "timezone": zone}
    )

    assert text_of(response).strip() == (
        f'<span class="preview-error"><span aria-hidden="true">✕</span> {lead}</span>'
    )


def test_editing_keeps_target_identity_and_options_set_through_the_api(web, team):
    monitor = make_monitor(
        team,
        targets=[
            {
                "type": "scrape",
                "urls": ["https://example.com/a"],
                "scrapeOptions": {"formats": ["markdown", "links"], "waitFor": 500},
            }
        ],
        notification={"email": {"enabled": True, "recipients": ["olive@example.com"]}},
    )
    target = monitor.targets.get()
    page = text_of(web.get(reverse("monitor-edit", kwargs={"pk": monitor.pk})))
    assert "https://example.com/a</textarea>" in page
    key = re.search(r'name="target" value="(t[0-9a-f]+)"', page)[1]
    data = scrape_form(
        name="Renamed",
        schedule="0 9 * * 1-5",
        target=[key],
        email_enabled="on",
        email_recipients="olive@example.com",
        **{
            f"{key}-id": str(target.id),
            f"{key}-type": "scrape",
            f"{key}-urls": "https://example.com/a\nhttps://example.com/b",
            f"{key}-only_main_content": "on",
            f"{key}-wait_for": "1000",
        },
    )
    response = web.post(reverse("monitor-edit", kwargs={"pk": monitor.pk}), data)
    assert response.status_code == 302, text_of(response)
    monitor.refresh_from_db()
    assert monitor.name == "Renamed" and monitor.schedule_cron == "0 9 * * 1-5"
    (kept,) = monitor.targets.all()
    assert kept.id == target.id
    assert kept.urls == ["https://example.com/a", "https://example.com/b"]
    assert kept.scrape_options == {"formats": ["markdown", "links"], "waitFor": 1000}


def test_a_wait_that_tips_stored_actions_over_the_limit_is_shown_at_the_wait_box(
    web, team
):
    actions = [{"type": "wait", "milliseconds": 50_000}]
    monitor = make_monitor(
        team,
        targets=[
            {
                "type": "scrape",
                "urls": ["https://example.com/a"],
                "scrapeOptions": {"actions": actions},
            }
        ],
    )
    target = monitor.targets.get()
    page = text_of(web.get(reverse("monitor-edit", kwargs={"pk": monitor.pk})))
    key = re.search(r'name="target" value="(t[0-9a-f]+)"', page)[1]
    data = scrape_form(
        target=[key],
        **{
            f"{key}-id": str(target.id),
            f"{key}-type": "scrape",
            f"{key}-urls": "https://example.com/a",
            f"{key}-wait_for": "20000",
        },
    )

    response = web.post(reverse("monitor-edit", kwargs={"pk": monitor.pk}), data)

    assert response.status_code == 400
    page = text_of(response)
    error = re.search(rf'id="err-{key}-wait_for"[^>]*>(.*?)</div>', page, re.S)[1]
    assert "may add up to 60 seconds at most: wait less." in error
    assert "waitFor" not in error  # plain words, not the API's names
    target.refresh_from_db()
    assert target.scrape_options == {"actions": actions}


def test_the_edit_form_shows_the_stored_schedule_and_its_preview(web, monitor):
    page = text_of(web.get(reverse("monitor-edit", kwargs={"pk": monitor.pk})))
    assert 'value="Every 30 minutes"' in page and 'value="Europe/Berlin"' in page
    assert "Every 30 minutes · next:" in page
    assert "*/30" not in page


def test_a_schedule_typed_in_words_comes_back_in_words_after_saving(web, team):
    created = web.post(reverse("monitor-create"), scrape_form())
    monitor = Monitor.objects.get(team=team)

    page = text_of(web.get(reverse("monitor-edit", kwargs={"pk": monitor.pk})))

    assert created.status_code == 302
    assert monitor.schedule_cron == "*/30 * * * *"
    assert 'value="Every 30 minutes"' in page


def test_a_monthly_schedule_is_described_on_the_monitor_page_and_the_list(web, team):
    make_monitor(team, schedule={"cron": "0 9 1 * *", "timezone": "UTC"})

    detail = text_of(web.get(Monitor.objects.get().get_absolute_url()))
    listing = text_of(web.get(reverse("monitor-list")))

    for page in (detail, listing):
        assert "Monthly on day 1 at 09:00, UTC" in page
        assert "0 9 1 * *" not in page and "Cron" not in page


def test_a_schedule_without_words_shows_its_cron_once_as_a_detail(web, team):
    make_monitor(team, schedule={"cron": "0 0,6,12,18,21 * * *", "timezone": "UTC"})

    detail = text_of(web.get(Monitor.objects.get().get_absolute_url()))
    listing = text_of(web.get(reverse("monitor-list")))

    for page in (detail, listing):
        assert (
            'Custom schedule <code class="muted" title="Cron expression">'
            "0 0,6,12,18,21 * * *</code>, UTC"
        ) in page
        assert page.count("0 0,6,12,18,21 * * *") == 1


# The same invalid input through the API and through the dashboard's inline
# validation: every issue the API reports appears next to a form field, in the
# same words when they are plain, in the rule's plain words when the API's name
# its fields (issue #21.2).
SEARCH = {"target": ["t0000bbbb"], "t0000bbbb-type": "search"}
API_VS_FORM = [
    (
        {"schedule": {"text": "every banana", "timezone": "UTC"}},
        {"schedule": "every banana", "timezone": "UTC"},
    ),
    ({"judgeEnabled": True}, {"judge": "on"}),
    (
        {"targets": [{"type": "search", "queries": ["acme"]}]},
        SEARCH | {"t0000bbbb-queries": "acme"},
    ),
    (
        {"targets": [{"type": "scrape", "urls": ["ftp://x.example/", "https://ok/"]}]},
        {"t0000aaaa-urls": "ftp://x.example/\nhttps://ok/"},
    ),
    (
        {"schedule": {"cron": "* * * * *", "timezone": "UTC"}},
        {"schedule": "* * * * *", "timezone": "UTC"},
    ),
    (
        {"webhook": {"url": "https://h.example/", "headers": {"X-Firecrawl-Id": "x"}}},
        {"webhook_url": "https://h.example/", "webhook_headers": "X-Firecrawl-Id: x"},
    ),
    (
        {
            "goal": "g",
            "targets": [
                {
                    "type": "search",
                    "queries": ["a"],
                    "maxResults": 99,
                    "includeDomains": ["a.com"],
                    "excludeDomains": ["b.com"],
                }
            ],
        },
        SEARCH
        | {
            "goal": "g",
            "t0000bbbb-queries": "a",
            "t0000bbbb-max_results": "99",
            "t0000bbbb-include_domains": "a.com",
            "t0000bbbb-exclude_domains": "b.com",
        },
    ),
    (
        {"notification": {"email": {"enabled": True, "recipients": ["not-an-email"]}}},
        {"email_enabled": "on", "email_recipients": "not-an-email"},
    ),
    ({"name": "", "retentionDays": 0}, {"name": "", "retention_days": "0"}),
]


# DRF's own messages ("Ensure this field has at least 1 elements."), which the
# form words afresh for each field (monitors.dashboard.forms.words).
DRF_STOCK_CODES = {"required", "null", "blank", "empty", "min_length", "max_length"}
DRF_STOCK_CODES |= {"min_value", "max_value", "invalid_choice", "max_string_length"}
# What a non-technical reader should never meet: the contract's field names and
# DRF's stock phrasing.
API_WORDS = re.compile(
    r"judgeEnabled|retentionDays|maxResults|includeDomains|excludeDomains|"
    r"scrapeOptions|crawlOptions|searchWindow|includeDiffs|non-empty|Ensure this|"
    r"This field|elements|A valid integer|valid choice|This list"
)


def _messages_in_slots(body: str) -> list[str]:
    messages = []
    for content in re.findall(
        r'<div id="err-[^"]+" class="field-error"[^>]*>(.*?)</div>', body
    ):
        for message in re.findall(r"<p>(.*?)</p>", content):
            messages.append(re.sub(r"^“[^”]*”: ", "", html.unescape(message)))
    return messages


@pytest.mark.parametrize(("api_changes", "form_changes"), API_VS_FORM)
def test_inline_validation_gives_the_same_messages_as_the_api(
    web, api, api_changes, form_changes
):
    body = {
        "name": "Pricing",
        "schedule": {"text": "every 30 minutes", "timezone": "Europe/Berlin"},
        "targets": [{"type": "scrape", "urls": ["https://example.com/pricing"]}],
    } | api_changes
    api_response = api.post("/v2/monitor", body, format="json")
    assert api_response.status_code == 400
    api_messages = sorted(issue["message"] for issue in api_response.json()["details"])

    form_response = web.post(
        reverse("monitor-validate-new"),
        scrape_form(**form_changes),
        HTTP_HX_REQUEST="true",
    )
    form_messages = _messages_in_slots(form_response.content.decode())
    assert len(form_messages) == len(api_messages)
    for issue in api_response.json()["details"]:
        if issue["code"] in rules.RULES:
            # The rule's words, with what it quotes ({zone}, {unit}) filled in.
            plain = rules.RULES[issue["code"]].plain
            pattern = re.sub(r"\\\{\w+\\\}", ".+", re.escape(plain))
            assert any(re.fullmatch(pattern, m) for m in form_messages), plain
        elif issue["code"] not in DRF_STOCK_CODES:
            # The same words, with the form's quotes around a name.
            assert curly_quotes(issue["message"]) in form_messages
    assert not [m for m in form_messages if API_WORDS.search(m)]
    assert not Monitor.objects.exists()


# ---------------------------------------------------------------- monitor page


def test_monitor_page_summarises_settings(web, team):
    monitor = make_monitor(
        team,
        goal="Price changes",
        webhook={"url": "https://hooks.example.com/x"},
        notification={
            "email": {"enabled": True, "recipients": ["someone@else.example"]}
        },
    )
    page = text_of(web.get(monitor.get_absolute_url()))
    assert "https://example.com/pricing" in page
    assert "Every 30 minutes, Europe/Berlin" in page
    assert "*/30" not in page  # no cron for a schedule said in words
    assert "someone@else.example" in page and "waiting for confirmation" in page
    assert "https://hooks.example.com/x" in page
    assert "Run now" in page and "No checks yet" in page


def test_monitor_page_lists_check_history(web, monitor):
    make_check(monitor, trigger="scheduled")
    make_check(
        monitor,
        status="failed",
        summary={},
        error="Previous monitor check is still running.",
    )
    page = text_of(web.get(monitor.get_absolute_url()))
    assert "Scheduled" in page and "Run by hand" in page
    assert "42 s" in page and "1 changed" in page
    assert "Previous monitor check is still running." in page


def test_run_now_queues_a_manual_check_and_shows_progress(web, monitor):
    response = web.post(
        reverse("monitor-run", kwargs={"pk": monitor.pk}), HTTP_HX_REQUEST="true"
    )
    check = Check.objects.get(monitor=monitor)
    assert (check.trigger, check.status) == ("manual", "queued")
    body = text_of(response)
    progress = reverse(
        "check-progress", kwargs={"pk": monitor.pk, "check_id": check.pk}
    )
    assert f'hx-get="{progress}" hx-trigger="every 1s"' in body
    assert "Waiting for a worker" in body

    # A second press shows the same running check instead of starting another.
    web.post(reverse("monitor-run", kwargs={"pk": monitor.pk}), HTTP_HX_REQUEST="true")
    assert Check.objects.filter(monitor=monitor).count() == 1


def test_run_now_without_javascript_goes_to_the_check(web, monitor):
    response = web.post(reverse("monitor-run", kwargs={"pk": monitor.pk}))
    check = Check.objects.get(monitor=monitor)
    assert response["Location"] == check.get_absolute_url()


def test_run_now_on_a_paused_monitor_explains_why_not(web, monitor):
    monitor.pause()
    monitor.save()
    response = web.post(
        reverse("monitor-run", kwargs={"pk": monitor.pk}), HTTP_HX_REQUEST="true"
    )
    assert "Resume it before running a check" in text_of(response)
    assert not Check.objects.exists()


def test_addresses_kept_while_e_mail_is_off_are_mentioned(web, team):
    monitor = make_monitor(
        team,
        notification={
            "email": {
                "enabled": False,
                "recipients": ["a@example.com", "b@example.com"],
            }
        },
    )
    page = web.get(monitor.get_absolute_url()).content.decode()
    assert "(2 addresses kept for when it is switched on)" in page


def test_a_paused_monitors_page_offers_run_now_disabled_saying_why(web, monitor):
    active = web.get(monitor.get_absolute_url()).content.decode()
    monitor.pause()
    monitor.save()

    paused = web.get(monitor.get_absolute_url()).content.decode()

    assert re.search(r'<button[^>]*id="run-now"[^>]*disabled', paused)
    assert "This monitor is paused: resume it to run a check." in paused
    assert not re.search(r'<button[^>]*id="run-now"[^>]*disabled', active)


def test_progress_polls_until_the_check_finishes_then_stops_polling(web, monitor):
    check = make_check(
        monitor, status="running", pages_total=4, pages_done=1, finished_at=None
    )
    url = reverse("check-progress", kwargs={"pk": monitor.pk, "check_id": check.pk})
    running = web.get(url, HTTP_HX_REQUEST="true")
    assert running.status_code == 200
    assert "1 of 4 pages done" in text_of(
        running
    ) and 'hx-trigger="every 1s"' in text_of(running)

    Check.objects.filter(pk=check.pk).update(
        status="completed", pages_done=4, finished_at=timezone.now()
    )
    done = web.get(url, HTTP_HX_REQUEST="true")
    assert done.status_code == 286
    assert "every 1s" not in text_of(done) and "1 changed" in text_of(done)
    assert "checkFinished" in done["HX-Trigger"]
    assert web.get(url).status_code == 302  # not htmx: go to the check page


def test_progress_counts_a_web_search_s_results_as_results_not_pages(web, team):
    news = make_monitor(team, name="News")
    news.targets.all().delete()
    search = Target.objects.create(monitor=news, type="search", queries=["acme"])
    check = make_check(
        news,
        status="running",
        pages_total=3,
        pages_done=2,
        finished_at=None,
        target_results=[
            {"targetId": str(search.pk), "type": "search", "resultCount": 3}
        ],
    )
    url = reverse("check-progress", kwargs={"pk": news.pk, "check_id": check.pk})
    polled = text_of(web.get(url, HTTP_HX_REQUEST="true"))
    assert "Checking search results…" in polled
    assert "2 of 3 search results done" in polled and "pages" not in polled


def test_progress_of_pages_and_search_results_together_names_both(web, monitor):
    search = Target.objects.create(monitor=monitor, type="search", queries=["acme"])
    scrape = monitor.targets.get(type="scrape")
    make_check(
        monitor,
        status="running",
        pages_total=4,
        pages_done=1,
        finished_at=None,
        target_results=[
            {"targetId": str(scrape.pk), "type": "scrape", "expectedJobs": ["x"]},
            {"targetId": str(search.pk), "type": "search", "resultCount": 3},
        ],
    )
    page = text_of(web.get(monitor.get_absolute_url()))
    assert "Checking pages and search results…" in page
    assert "1 of 4 pages and search results done" in page


def test_a_check_page_polling_its_progress_never_links_to_itself(web, monitor):
    check = make_check(
        monitor, status="running", pages_total=4, pages_done=1, finished_at=None
    )
    url = reverse("check-progress", kwargs={"pk": monitor.pk, "check_id": check.pk})
    own_page = web.get(check.get_absolute_url()).content.decode()
    polled_there = web.get(
        url,
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL=f"http://testserver{check.get_absolute_url()}",
    ).content.decode()
    polled_elsewhere = web.get(
        url,
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL=f"http://testserver{monitor.get_absolute_url()}",
    ).content.decode()
    # Filtered, and seen through a proxy that ends TLS: still its own page.
    polled_filtered = web.get(
        url,
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL=f"https://pw.example{check.get_absolute_url()}?status=changed",
    ).content.decode()

    assert "1 of 4 pages done" in own_page and "1 of 4 pages done" in polled_there
    assert "Open this check" not in own_page and "Open this check" not in polled_there
    assert "Open this check" in polled_elsewhere
    assert "Open this check" not in polled_filtered


def test_history_fragment_for_htmx(web, monitor):
    make_check(monitor)
    response = web.get(
        monitor.get_absolute_url(),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="check-history",
    )
    assert (
        response.content.decode()
        .lstrip()
        .startswith('<section class="card" id="check-history"')
    )


def test_the_chart_is_a_fragment_htmx_reloads_when_a_check_finishes(web, monitor):
    page = web.get(monitor.get_absolute_url()).content.decode()
    assert "No finished checks yet" in page
    make_check(monitor)

    response = web.get(
        monitor.get_absolute_url(),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="changes-chart",
    )

    fragment = response.content.decode().lstrip()
    assert fragment.startswith('<section class="card" id="changes-chart"')
    assert 'hx-trigger="checkFinished from:body"' in fragment
    assert "No finished checks yet" not in fragment and "in 1 check," in fragment


def test_deleting_asks_first_then_removes_the_monitor(web, monitor):
    url = reverse("monitor-delete", kwargs={"pk": monitor.pk})
    assert "cannot be undone" in text_of(web.get(url))
    monitor.refresh_from_db()
    assert monitor.deleted_at is None
    response = web.post(url)
    assert response["Location"] == reverse("monitor-list")
    monitor.refresh_from_db()
    assert monitor.deleted_at is not None and monitor.next_run_at is None
    assert web.get(monitor.get_absolute_url()).status_code == 404


def test_deleting_says_what_goes_with_the_monitor_before_anything_goes(web, monitor):
    url = reverse("monitor-delete", kwargs={"pk": monitor.pk})
    assert "it has not checked anything yet" in text_of(web.get(url))
    for _ in range(3):
        Check.objects.create(monitor=monitor, status=Check.Status.COMPLETED)

    asked = " ".join(text_of(web.get(url)).split())

    assert "its history of 3 checks, the changes they found and the copies" in asked
    assert "Its feed link stops working" in asked
    monitor.refresh_from_db()
    assert monitor.deleted_at is None
    assert Check.objects.filter(monitor=monitor).count() == 3


# ---------------------------------------------------------------- check and diff pages


def test_check_page_lists_pages_with_status_chips(web, monitor):
    check = make_check(monitor)
    make_page(check, "a", "b", url="https://example.com/1")
    make_page(check, None, "new", url="https://example.com/2")
    make_page(
        check,
        None,
        "x",
        url="https://example.com/3",
        status="error",
        error="",
        status_code=404,
        current_snapshot=None,
    )
    page = text_of(web.get(check.get_absolute_url()))
    assert re.search(r"All <span class=\"chip-count\">3</span>", page)
    assert re.search(r"Changed <span class=\"chip-count\">1</span>", page)
    assert "The page was not found (HTTP 404)." in page
    assert "See what changed" in page

    link = re.search(r'class="chip s-error" href="([^"]*)"', page)[1]
    assert link == "?status=error"
    only_errors = text_of(web.get(check.get_absolute_url() + link))
    assert "example.com/3" in only_errors and "example.com/1" not in only_errors


def test_a_check_that_failed_before_any_page_shows_why_not_empty_filters(web, monitor):
    check = make_check(
        monitor, status=Check.Status.FAILED, error="Every target failed.", summary={}
    )

    page = text_of(web.get(check.get_absolute_url()))

    assert 'class="chip' not in page and "chip-count" not in page
    assert "No page was looked at: the check failed before it reached any page" in page
    assert "No pages." not in page


def test_a_check_where_every_page_failed_says_so_and_offers_no_empty_filters(
    web, monitor
):
    check = make_check(monitor, status=Check.Status.PARTIAL)
    for n in (1, 2):
        make_page(
            check,
            None,
            "x",
            url=f"https://example.com/{n}",
            status="error",
            error="",
            status_code=503,
            current_snapshot=None,
        )

    page = text_of(web.get(check.get_absolute_url()))

    assert "No page could be checked in this check" in page
    assert re.search(r"Errors <span class=\"chip-count\">2</span>", page)
    for empty in ("Changed", "New", "Removed", "Unchanged"):
        assert not re.search(rf"{empty} <span class=\"chip-count\">0</span>", page)


def test_a_page_still_gone_reads_as_still_gone_not_as_unchanged(web, monitor):
    check = make_check(monitor)
    gone = make_page(
        check,
        None,
        "",
        url="https://example.com/gone",
        status="same",
        status_code=404,
        metadata={"statusCode": 404},
        current_snapshot=None,
    )
    make_page(
        check, None, "x", url="https://example.com/same", status="same", status_code=200
    )

    page = text_of(web.get(check.get_absolute_url()))
    detail = text_of(web.get(gone.get_absolute_url()))

    badge = '<span class="badge s-same">Still gone (the page answers 404)</span>'
    assert page.count(badge) == 1
    assert "No change since it was reported removed" in page
    assert page.count('<span class="muted">No change</span>') == 1  # the other page
    assert "Still gone (the page answers 404)" in detail
    assert "reported removed in an earlier check and has not come back" in detail
    assert "Nothing changed on this page" not in detail


def test_a_change_found_before_the_goal_was_set_is_shown_as_not_judged(
    web, monitor, changed_page
):
    monitor.goal = "Tell me when a price changes"
    monitor.judge_enabled = True
    monitor.save(update_fields=["goal", "judge_enabled"])

    page = text_of(web.get(changed_page.check_run.get_absolute_url()))
    detail = text_of(web.get(changed_page.get_absolute_url()))

    assert re.search(r"Meaningful changes <span class=\"chip-count\">1</span>", page)
    assert re.search(r"Not judged <span class=\"chip-count\">1</span>", page)
    assert '<span class="badge judged-none">Not judged</span>' in page
    assert "Matters for the goal" not in page
    assert "while the monitor was not judging changes against a goal" in detail


def test_a_monitor_without_a_goal_shows_no_verdicts_on_its_checks(
    web, monitor, changed_page
):
    page = text_of(web.get(changed_page.check_run.get_absolute_url()))
    detail = text_of(web.get(changed_page.get_absolute_url()))

    for text in (page, detail):
        assert "Not judged" not in text and "Meaningful changes" not in text


def test_check_page_explains_a_failed_check(web, monitor):
    check = make_check(
        monitor,
        status="failed",
        error="Monitor check exceeded its time limit and was stopped.",
    )
    page = text_of(web.get(check.get_absolute_url()))
    assert "What went wrong:" in page and "time limit" in page


def test_diff_page_shows_the_stored_diff_with_navigation(web, changed_page):
    page = text_of(web.get(changed_page.get_absolute_url(), {"view": "split"}))
    assert '<div class="diff-scroll" hx-disable><table class="diff diff-split' in page
    assert 'id="change-1"' in page and 'data-change-step="1"' in page
    assert "Pricing — Example" in page
    assert "Pro costs $19 a month." in page and "Pro costs $24 a month." in page
    assert "This page over time" in page


def test_diff_page_renders_inline_on_request_and_as_a_fragment(web, changed_page):
    url = changed_page.get_absolute_url()
    assert 'class="diff diff-inline ' in text_of(web.get(url, {"view": "inline"}))
    fragment = web.get(
        url, {"view": "inline"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="diff-region"
    )
    assert fragment.content.decode().lstrip().startswith('<div id="diff-region"')


def test_page_derived_text_is_escaped_everywhere(web, monitor):
    check = make_check(monitor)
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    result = make_page(
        check,
        f"# Hello\n\n{evil} old",
        f"# Hello\n\n{evil} new",
        metadata={"title": evil},
        url="https://example.com/?q=<b>",
    )
    for url in (
        check.get_absolute_url(),
        result.get_absolute_url(),
        result.get_absolute_url() + "?view=inline",
    ):
        body = web.get(url).content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body, url


def test_only_http_links_are_clickable(web, monitor):
    check = make_check(monitor)
    result = make_page(check, "a", "b", url="javascript:alert(1)")
    body = web.get(result.get_absolute_url()).content.decode()
    assert 'href="javascript:' not in body


def test_page_history_links_each_check_that_saw_the_page(web, monitor):
    first = make_page(make_check(monitor), None, "v1")
    second = make_page(make_check(monitor), "v1", "v2")
    page = text_of(web.get(second.get_absolute_url()))
    assert first.get_absolute_url() in page and "(this one)" in page


# ---------------------------------------------------------------- keys and team


def test_a_new_api_key_is_shown_once_and_works(web, team, api_key):
    response = web.post(reverse("api-keys"), {"name": "Zapier"})
    raw = re.search(
        r'id="new-key" type="text" readonly value="(pw_[^"]+)"', text_of(response)
    )[1]
    assert response["Cache-Control"] == "no-store"
    key = ApiKey.objects.get(team=team, name="Zapier")
    assert key.matches(raw) and raw not in text_of(web.get(reverse("api-keys")))
    assert key.display_prefix in text_of(web.get(reverse("api-keys")))


def test_revoking_a_key_asks_first(web, team):
    key, raw = ApiKey.issue(team, name="old")
    url = reverse("api-key-revoke", kwargs={"key_id": key.pk})
    assert "stop working at once" in text_of(web.get(url))
    key.refresh_from_db()
    assert key.is_active
    web.post(url)
    key.refresh_from_db()
    assert not key.is_active


def test_team_page_lists_members(web, team, django_user_model):
    other = django_user_model.objects.create_user("mia", "mia@example.com", PASSWORD)
    Membership.objects.create(team=team, user=other)
    page = text_of(web.get(reverse("team-members")))
    assert "olive" in page and "mia@example.com" in page and "Owner" in page
    # An owner without admin rights manages members here, not in the admin.
    assert "Send invitation" in page
    assert "/admin/" not in page


def test_team_page_links_staff_to_the_teams_members_in_the_admin(
    client, team, django_user_model
):
    admin = django_user_model.objects.create_superuser("root", "r@example.com", "x")
    Membership.objects.create(team=team, user=admin, role=Membership.Role.OWNER)
    client.force_login(admin)
    page = text_of(client.get(reverse("team-members")))
    link = reverse("admin:monitors_team_change", args=[team.pk])
    assert f'<a href="{link}">in the administration</a>' in page
    assert client.get(link).status_code == 200


def test_a_monitor_with_a_webhook_comes_with_the_teams_signing_secret(web, team):
    assert team.webhook_secret == ""
    make_monitor(team)  # no webhook: nothing to sign yet
    team.refresh_from_db()
    assert team.webhook_secret == ""
    make_monitor(team, webhook={"url": "https://hooks.example.com/x"})
    team.refresh_from_db()
    assert team.webhook_secret.startswith("whsec_")
    page = text_of(web.get(reverse("team-members")))
    assert team.masked_webhook_secret in page
    assert team.webhook_secret not in page  # masked until someone asks


def test_showing_the_signing_secret_asks_first_then_shows_it_once(web, team, caplog):
    secret = team.ensure_webhook_secret()
    url = reverse("webhook-secret-show")
    confirm = text_of(web.get(url))
    assert "Show the webhook signing secret?" in confirm
    assert secret not in confirm

    with caplog.at_level("INFO", logger="monitors.dashboard.notifications"):
        response = web.post(url)
    shown = re.search(
        r'id="webhook-secret" type="text" readonly value="(whsec_[^"]+)"',
        text_of(response),
    )[1]
    assert shown == secret
    assert response["Cache-Control"] == "no-store"
    assert 'data-copy="#webhook-secret"' in text_of(response)
    assert f"team {team.pk} shown to user" in caplog.text
    team.refresh_from_db()
    assert team.webhook_secret == secret  # showing changes nothing


def test_each_team_member_sees_only_their_own_teams_secret(
    client, team, other_team, outsider
):
    ours = team.ensure_webhook_secret()
    theirs = other_team.ensure_webhook_secret()
    client.force_login(outsider)
    page = text_of(client.post(reverse("webhook-secret-show")))
    assert theirs in page and ours not in page


def test_a_new_secret_is_shown_and_the_old_one_signs_for_a_day(web, team):
    old = team.ensure_webhook_secret()
    url = reverse("webhook-secret-rotate")
    assert "For the next 24 hours" in text_of(web.get(url))
    team.refresh_from_db()
    assert team.webhook_secret == old  # asking changes nothing

    rotated_at = timezone.now()
    response = web.post(url, follow=True)
    team.refresh_from_db()
    new = team.webhook_secret
    assert response.redirect_chain == [(reverse("webhook-secret-show"), 302)]
    assert new != old and new in text_of(response)
    assert response["Cache-Control"] == "no-store"
    assert "The previous secret also signs messages until" in text_of(response)
    # Reloading the page shown asks again; it neither shows nor rotates.
    reloaded = text_of(web.get(reverse("webhook-secret-show")))
    team.refresh_from_db()
    assert new not in reloaded and team.webhook_secret == new
    later = rotated_at + timedelta(hours=23, minutes=59)
    assert team.webhook_signing_secrets(later) == [new, old]
    assert team.webhook_signing_secrets(later + timedelta(minutes=2)) == [new]


# ---------------------------------------------------------------- the page shell


def test_pages_load_htmx_from_our_static_files_with_the_csp_nonce(web, monitor):
    response = web.get(reverse("monitor-list"))
    body = response.content.decode()
    policy = response["Content-Security-Policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)[1]
    scripts = re.findall(r"<script[^>]*>", body)
    assert scripts and all(
        f'nonce="{nonce}"' in tag and "src=" in tag for tag in scripts
    )
    assert any("/static/django_htmx/htmx-2" in tag for tag in scripts)
    assert "unsafe-inline" not in policy
    assert " style=" not in body and "hx-on" not in body
    assert 'hx-headers=\'{"X-CSRFToken": "' in body


def test_static_files_are_served(client, db):
    # Static files are public (LoginRequiredMiddleware never sees them).
    assert settings.STATIC_URL
    response = client.get("/static/css/app.css")
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0.04, "under 0.1 s"),
        (0.34, "0.3 s"),
        (2.46, "2.5 s"),
        (9.96, "10 s"),
        (42, "42 s"),
        (timedelta(minutes=3, seconds=5), "3 min 5 s"),
        (timedelta(hours=2, minutes=1), "2 h 1 min"),
    ],
)
def test_durations_under_ten_seconds_keep_a_decimal(seconds, shown):
    assert duration(seconds) == shown


def test_a_check_page_says_which_targets_it_did_not_look_at(web, team):
    monitor = make_monitor(
        team,
        goal="Competitor news",
        targets=[
            {"type": "scrape", "urls": ["https://example.com/pricing"]},
            {"type": "search", "queries": ["acme <launch>"]},
        ],
    )
    check = make_check(monitor)
    targets = list(monitor.targets.order_by("position"))
    planned = sources.plan(check, targets)
    check.target_results = [source.target_result() for source, _ in planned]
    check.save(update_fields=["target_results"])
    detail = web.get(monitor.get_absolute_url()).content.decode()
    assert "no web search service is set up for this Pagewatch yet" in detail
    page = web.get(check.get_absolute_url()).content.decode()
    assert "Not looked at in this check:" in page
    assert "Web search for “acme &lt;launch&gt;”" in page
    # Plain words on the dashboard; the API's reason names the settings.
    assert "no web search service is set up for this Pagewatch yet" in page
    assert "SEARXNG_URL" not in page

    targets[1].delete()  # the search target goes; its check stays as it was
    page = web.get(check.get_absolute_url()).content.decode()
    assert "A search target removed from the monitor since." in page


def test_a_check_of_scrape_targets_only_lists_nothing_as_skipped(web, monitor):
    check = make_check(monitor)
    planned = sources.plan(check, list(monitor.targets.all()))
    check.target_results = [source.target_result() for source, _ in planned]
    check.save(update_fields=["target_results"])
    assert "Not looked at" not in web.get(check.get_absolute_url()).content.decode()


@pytest.mark.parametrize(
    ("kind", "status_code", "error", "words"),
    [
        (
            "timeout",
            None,
            "Gave up on example.com after 30 s",
            "took too long to answer",
        ),
        ("dns", None, "Could not resolve nonexistent.invalid", "could not be found"),
        (
            "refused",
            None,
            "Connection refused by example.com",
            "refused the connection",
        ),
        (
            "tls",
            None,
            "TLS handshake with example.com failed (wrong version number)",
            "secure (HTTPS) connection",
        ),
        (
            "blocked_address",
            None,
            "Blocked: 169.254.169.254 is a cloud metadata address",
            "cloud provider's internal services",
        ),
        ("too_many_redirects", None, "Stopped after 5 redirects", "kept redirecting"),
        ("too_large", None, "Page is larger than 10 MB", "too large to check"),
        (
            "unreadable",
            200,
            "The page is binary content (application/zip); nothing to compare",
            "could not be turned into text",
        ),
    ],
)
def test_page_errors_are_put_in_plain_words_by_kind_with_the_details_kept(
    kind, status_code, error, words
):
    shown = plain_error(kind, status_code, error)
    assert words in shown
    assert shown.endswith(f"({error})")  # the exact reason stays visible


def test_plain_words_come_from_the_kind_not_from_the_message():
    shown = plain_error("timeout", None, "Connection refused, certificate private")
    assert shown.startswith("The page took too long to answer.")


@pytest.mark.parametrize(
    ("kind", "status_code", "words"),
    [
        ("http_4xx", 401, "The page asks for a login (HTTP 401)."),
        ("http_4xx", 403, "The site refused access (HTTP 403)."),
        ("http_4xx", 404, "The page was not found (HTTP 404)."),
        ("http_4xx", 410, "The page is gone (HTTP 410)."),
        ("http_4xx", 429, "The site said we asked too often (HTTP 429)."),
        ("http_4xx", 418, "The site turned the request down (HTTP 418)."),
        ("http_5xx", 503, "The site had an internal problem (HTTP 503)."),
    ],
)
def test_http_errors_are_said_by_their_status(kind, status_code, words):
    assert plain_error(kind, status_code, f"The page answered HTTP {status_code}.") == (
        words
    )


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_every_error_kind_has_plain_words_without_jargon(kind):
    shown = plain_error(kind, 418 if kind == ErrorKind.HTTP_4XX else 500, "")
    assert shown.endswith(".") and shown != plain_error("", None, "")
    words = set(re.findall(r"[a-z0-9_]+", shown.lower()))
    # No kind ids ("too_large", "dns"...), though "refused" may be a word.
    assert not words & {"dns", "tls", "timeout", "protocol", "4xx", "5xx"}
    assert "_" not in shown
    for field in ("minAge", "maxAge", "statusCode", "error", "scrapeOptions"):
        assert field not in shown  # no API field names


def test_every_error_kind_has_words_of_its_own():
    shown = {plain_error(kind, 500, "") for kind in ErrorKind}
    assert len(shown) == len(ErrorKind)


def test_a_page_without_a_kind_shows_its_stored_text_as_it_is():
    assert plain_error("", 200, "Some old reason") == "Some old reason"
    assert plain_error("", None, "") == "Something went wrong while checking this page."
    # Rows from before kinds were stored still say what their HTTP status means.
    assert plain_error("", 404, "The page answered HTTP 404.") == (
        "The page was not found (HTTP 404)."
    )


def test_check_and_diff_pages_show_a_page_error_in_plain_words_escaped(web, monitor):
    check = make_check(monitor)
    result = make_page(
        check,
        None,
        "x",
        status="error",
        error="Blocked: <b>10.0.0.1</b> is a private address",
        error_kind="blocked_address",
        current_snapshot=None,
    )
    for url in (check.get_absolute_url(), result.get_absolute_url()):
        body = web.get(url).content.decode()
        assert "The address belongs to a private network" in body, url
        assert "Blocked: &lt;b&gt;10.0.0.1&lt;/b&gt; is a private address" in body, url


def test_a_check_error_is_shown_as_it_is(web, monitor):
    check = make_check(
        monitor, status="failed", summary={}, error="A check timed out somewhere."
    )
    for url in (monitor.get_absolute_url(), check.get_absolute_url()):
        body = text_of(web.get(url))
        assert "A check timed out somewhere." in body, url
        assert "took too long" not in body, url  # no guessing from its words


def test_favicon_ico_points_browsers_at_our_icon_without_a_session(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("favicon.svg")
    page = client.get(reverse("login")).content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in page


def test_a_last_check_that_found_no_page_links_to_the_check_that_says_why(web, monitor):
    empty = {"totalPages": 0, "same": 0, "changed": 0, "new": 0, "removed": 0,
             "error": 0}  # fmt: skip
    check = make_check(monitor, summary=empty)
    monitor.last_check_summary = empty
    monitor.save()

    page = text_of(web.get(reverse("monitor-list")))

    last_check = re.search(r'data-label="Last check">(.*?)</td>', page, re.S)[1]
    assert f'<a href="{check.get_absolute_url()}">No pages: see why</a>' in last_check


def test_the_list_says_the_last_check_failed_rather_than_no_pages(web, monitor):
    make_check(monitor)
    monitor.last_check_summary = {
        "totalPages": 0, "same": 0, "changed": 0, "new": 0, "removed": 0, "error": 0,
    }  # fmt: skip
    monitor.save()
    failed = make_check(monitor, status=Check.Status.FAILED, summary={}, error="Boom")

    page = text_of(web.get(reverse("monitor-list")))

    last_check = re.search(r'data-label="Last check">(.*?)</td>', page, re.S)[1]
    assert "Check failed" in last_check
    assert (
        f'<a href="{failed.get_absolute_url()}" class="badge c-failed">' in last_check
    )
    assert "No pages" not in last_check


def test_the_monitor_page_opens_on_its_last_checks_outcome_with_a_link_to_it(web, team):
    monitor = make_monitor(team)
    older = make_check(monitor, finished_at=timezone.now() - timedelta(days=2))
    latest = make_check(monitor, finished_at=timezone.now() - timedelta(hours=3))

    page = html.unescape(web.get(monitor.get_absolute_url()).content.decode())
    run_card = page[page.index('id="run-status"') :][:3000]

    assert "1 changed" in run_card
    assert "3 hours ago" in run_card
    assert f'href="{latest.get_absolute_url()}">See the results</a>' in run_card
    assert older.get_absolute_url() not in run_card
    assert "Run now" in run_card


def test_pausing_resuming_and_deleting_quote_the_monitor_name_as_saving_does(web, team):
    monitor = make_monitor(team, name="Broken pages")
    toggle = reverse("monitor-toggle", kwargs={"pk": monitor.pk})

    def said(response) -> str:
        return html.unescape(response.content.decode())

    paused = said(web.post(toggle, {"status": "paused"}, follow=True))
    resumed = said(web.post(toggle, {"status": "active"}, follow=True))
    announced = web.post(toggle, {"status": "paused"}, HTTP_HX_REQUEST="true")
    deleted = said(web.post(reverse("monitor-delete", args=[monitor.pk]), follow=True))

    assert "“Broken pages” paused." in paused
    assert "“Broken pages” resumed." in resumed
    trigger = json.loads(announced["HX-Trigger"])
    assert trigger["announce"]["message"] == "“Broken pages” paused."
    assert "“Broken pages” deleted." in deleted
    monitor.refresh_from_db()
    assert monitor.deleted_at is not None


def test_a_new_monitors_time_zone_starts_at_the_teams(web, team):
    team.time_zone = "America/New_York"
    team.save(update_fields=["time_zone"])
    form = web.get(reverse("monitor-create")).content.decode()
    assert re.search(r'<input[^>]*name="timezone"[^>]*value="America/New_York"', form)

    web.post(reverse("monitor-create"), scrape_form(timezone=""))
    assert Monitor.objects.get(team=team).schedule_timezone == "America/New_York"


def test_a_checks_page_and_its_pages_titles_say_which_check_and_which_page(
    web, monitor
):
    when = datetime(2026, 11, 29, 10, 32, tzinfo=UTC)
    check = Check.objects.create(
        monitor=monitor, status=Check.Status.COMPLETED, started_at=when
    )
    later = Check.objects.create(
        monitor=monitor,
        status=Check.Status.COMPLETED,
        started_at=when + timedelta(hours=1),
    )
    page = PageResult.objects.create(
        check_run=check,
        target_id=monitor.targets.first().pk,
        url="https://example.com/pricing",
        status=PageResult.Status.CHANGED,
        metadata={"title": "Plans"},
    )

    def title(url: str) -> str:
        return re.search(r"<title>(.*?)</title>", text_of(web.get(url)), re.S)[1]

    zone = monitor.schedule_timezone
    assert title(check.get_absolute_url()) == (
        f"Check of {local(when, zone)} · {monitor.name} · Pagewatch"
    )
    assert title(check.get_absolute_url()) != title(later.get_absolute_url())
    assert title(page.get_absolute_url()) == (
        f"Plans: Changed · {monitor.name}, check of {local(when, zone)} · Pagewatch"
    )


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("scrape", "Remove the Pages target"),
        ("crawl", "Remove the Website crawl target"),
        ("search", "Remove the Web search target"),
    ],
)
def test_each_targets_remove_button_is_named_in_plain_english(web, kind, name):
    """A screen reader read the button of a Pages target as "Remove this
    pages target"."""
    row = web.get(reverse("target-row"), {"type": kind}).content.decode()

    button = re.search(r"<button[^>]*data-remove-target[^>]*>(.*?)</button>", row, re.S)
    spoken = re.sub(r"<[^>]+>", "", button.group(1))
    assert " ".join(spoken.split()) == name


PRIVATE_HINT = (
    "For the administrator: set ALLOW_PRIVATE_NETWORK_TARGETS to allow private "
    "and local addresses."
)


def test_a_refused_private_address_says_which_setting_allows_it(web, settings):
    """Staff watching an intranet page read only "can never connect", though
    one setting lets Pagewatch reach private and local addresses."""
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    form = scrape_form(webhook_url="http://10.0.0.5/hook")
    form["t0000aaaa-urls"] = "http://192.168.1.20/status"

    page = html.unescape(web.post(reverse("monitor-create"), form).content.decode())

    assert "192.168.1.20 is a private address. " + PRIVATE_HINT in page
    assert "10.0.0.5 is a private address. " + PRIVATE_HINT in page
    assert not Monitor.objects.exists()


def test_a_metadata_address_is_refused_without_a_setting_to_allow_it(web, settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = False
    form = scrape_form()
    form["t0000aaaa-urls"] = "http://169.254.169.254/latest/meta-data/"

    page = html.unescape(web.post(reverse("monitor-create"), form).content.decode())

    assert "Pagewatch can never connect to http://169.254.169.254/" in page
    assert "ALLOW_PRIVATE_NETWORK_TARGETS" not in page
