"""Suggested lines to ignore (checks.ignore_suggestions) on a monitor's page:
offered once a line's numbers changed in each of the last checks, added to
the monitor's lines to ignore by the button, for those who may edit."""

from __future__ import annotations

import html
import re

import pytest

from checks import ignore_suggestions, runner
from checks.content.noise import strip_noise
from checks.ignore_suggestions import (
    CHECKS_LOOKED_AT,
    entry_for,
    numbers_changed,
)
from checks.models import Check, PageResult
from monitors import rules
from monitors.models import Membership, Monitor, Target, Team
from teams.models import Activity
from tests.sites import Site

pytestmark = pytest.mark.django_db

ARTICLE = "<h1>News</h1><p>Our prices stay the same this year: $19 a month.</p>"
BUTTON = "Ignore these lines"
FOOTER_ENTRY = r"/^\s*Last updated: \d+-\d+-\d+ \d+:\d+:\d+ UTC\s*$/"


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


def member(client, team: Team, django_user_model, name: str, role: str):
    user = django_user_model.objects.create_user(name, f"{name}@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=role)
    client.force_login(user)
    return client


@pytest.fixture
def web(client, team, django_user_model):
    return member(client, team, django_user_model, "olive", Membership.Role.OWNER)


def serve(site: Site, minute: int, price: str = "$19") -> str:
    footer = f"<footer><p>Last updated: 2026-11-30 01:{minute:02}:07 UTC</p></footer>"
    return site.html("/news", "News", ARTICLE.replace("$19", price) + footer)


def watch(team: Team, site: Site) -> tuple[Monitor, str]:
    url = serve(site, 0)
    monitor = Monitor.objects.create(team=team, name="News", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])
    return monitor, url


def run(monitor: Monitor) -> Check:
    return runner.run(Check.objects.create(monitor=monitor, trigger="manual"))


def checks_with_a_ticking_footer(monitor: Monitor, site: Site, count: int) -> None:
    """`count` checks, the footer's time different in each."""
    for minute in range(1, count + 1):
        serve(site, minute)
        run(monitor)


def shown_entries(page: str) -> list[str]:
    return [
        html.unescape(value)
        for value in re.findall(r'name="entry" value="([^"]*)"', page)
    ]


def test_a_line_whose_numbers_change_is_generalised_to_any_number():
    assert entry_for("Last updated: 2026-11-30 01:02:07 UTC") == (FOOTER_ENTRY)
    assert entry_for("![Logo](http://x.test/logo.png?v=123)") == (
        r"/^\s*!\[Logo\]\(http://x\.test/logo\.png\?v=\d+\)\s*$/"
    )
    assert entry_for("Our team") is None


def test_an_indented_line_gets_an_entry_that_leaves_it_out():
    line = "  - 1,234 views"  # a nested list item, as our Markdown indents it

    entry = entry_for(line)

    assert entry == r"/^\s*- \d+,\d+ views\s*$/"
    text = "- Stats\n  - 1,240 views\n- Our team"
    assert strip_noise(text, [entry]) == "- Stats\n- Our team"


def test_a_line_whose_digits_re2_does_not_read_as_digits_gets_no_entry():
    arabic = "\u0661\u0662\u0663"  # Arabic-Indic digits: Python's \d, not RE2's

    assert entry_for(f"Views: {arabic}") is None
    assert entry_for(f"Views: {arabic} of 5") == f"/^\\s*Views: {arabic} of \\d+\\s*$/"


def test_a_counter_in_a_nested_list_is_suggested_and_ignoring_it_keeps_the_page_same(
    web, team, site
):
    def counter(views: int) -> str:
        stats = f"<ul><li>Stats<ul><li>{views:,} views</li></ul></li></ul>"
        return site.html("/news", "News", ARTICLE + stats)

    url = counter(1234)
    monitor = Monitor.objects.create(team=team, name="News", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])
    for views in range(1234, 1234 + CHECKS_LOOKED_AT + 1):
        counter(views)
        run(monitor)
    shown = shown_entries(web.get(monitor.get_absolute_url()).content.decode())
    assert shown == [r"/^\s*- \d+,\d+ views\s*$/"]

    web.post(f"/monitors/{monitor.pk}/ignore-lines/", {"entry": shown})

    counter(9999)
    assert run(monitor).pages.get(url=url).status == PageResult.Status.SAME
    page = web.get(monitor.get_absolute_url()).content.decode()
    assert BUTTON not in page


def test_a_rotating_quote_is_not_a_line_whose_numbers_changed():
    diff = "--- previous\n+++ current\n@@ -1,1 +1,1 @@\n-> Great tool\n+> Saved my day"
    assert numbers_changed(diff) == {}
    counter = "--- previous\n+++ current\n@@ -1,1 +1,1 @@\n-1,234 views\n+1,240 views"
    assert numbers_changed(counter) == {r"/^\s*\d+,\d+ views\s*$/": "1,240 views"}


def test_a_footer_that_changed_in_each_of_the_last_checks_is_suggested_not_before(
    web, team, site
):
    monitor, _ = watch(team, site)
    run(monitor)  # the first check: the page is new, nothing changed yet
    checks_with_a_ticking_footer(monitor, site, CHECKS_LOOKED_AT - 1)

    page = web.get(monitor.get_absolute_url()).content.decode()
    assert BUTTON not in page and "may be noise" not in page

    checks_with_a_ticking_footer(monitor, site, 1)

    page = web.get(monitor.get_absolute_url()).content.decode()
    said = f"changed in every one of the last {CHECKS_LOOKED_AT} checks, only in its"
    assert said in page
    assert "“Last updated: 2026-11-30 01:01:07 UTC”" in page
    assert shown_entries(page) == [FOOTER_ENTRY]
    assert BUTTON in page


def test_a_line_that_changed_only_once_is_not_suggested(web, team, site):
    monitor, _ = watch(team, site)
    run(monitor)
    serve(site, 1, price="$24")  # the price changes once, with the footer
    run(monitor)
    for minute in range(2, CHECKS_LOOKED_AT + 2):
        serve(site, minute, price="$24")
        run(monitor)
    assert PageResult.objects.filter(status="changed").count() == CHECKS_LOOKED_AT + 1

    page = web.get(monitor.get_absolute_url()).content.decode()
    assert shown_entries(page) == [FOOTER_ENTRY]
    assert "$24" not in re.search(r'id="noise-suggestions".*?</section>', page, re.S)[0]


def test_ignoring_adds_the_shown_entry_the_next_check_is_same_and_it_is_logged(
    web, team, site
):
    monitor, url = watch(team, site)
    run(monitor)
    checks_with_a_ticking_footer(monitor, site, CHECKS_LOOKED_AT)
    shown = shown_entries(web.get(monitor.get_absolute_url()).content.decode())

    response = web.post(
        f"/monitors/{monitor.pk}/ignore-lines/", {"entry": shown}, follow=True
    )

    assert response.status_code == 200
    monitor.refresh_from_db()
    assert monitor.ignore_lines == shown
    entry = Activity.objects.get(monitor=monitor, kind=Activity.Kind.MONITOR_EDITED)
    assert entry.user.username == "olive"
    assert entry.details["fields"] == ["ignored lines"]
    page = response.content.decode()
    assert "Those lines are ignored from the next check on." in page
    assert BUTTON not in page  # what the checks saw is ignored now
    serve(site, 59)
    assert run(monitor).pages.get(url=url).status == PageResult.Status.SAME


def test_an_entry_the_rules_refuse_is_a_400_and_nothing_changes(web, team, site):
    monitor, _ = watch(team, site)

    response = web.post(f"/monitors/{monitor.pk}/ignore-lines/", {"entry": "/(open/"})

    assert response.status_code == 400
    assert "Nothing was added" in response.content.decode()
    monitor.refresh_from_db()
    assert monitor.ignore_lines == []
    assert not Activity.objects.filter(monitor=monitor).exists()


def test_an_entry_no_column_can_keep_is_a_400_that_says_why(web, team, site):
    monitor, _ = watch(team, site)

    response = web.post(f"/monitors/{monitor.pk}/ignore-lines/", {"entry": "ab\x00c"})

    assert response.status_code == 400
    said = "Nothing was added: Null characters are not allowed."
    assert said in response.content.decode()
    monitor.refresh_from_db()
    assert monitor.ignore_lines == []
    assert rules.ignore_line_error("ab\ud800c") == (
        "Surrogate characters are not allowed: U+D800."
    )


def test_a_viewer_sees_the_suggestion_but_no_button_and_cannot_post(
    client, team, site, django_user_model
):
    viewer = member(client, team, django_user_model, "vera", Membership.Role.VIEWER)
    monitor, _ = watch(team, site)
    run(monitor)
    checks_with_a_ticking_footer(monitor, site, CHECKS_LOOKED_AT)

    page = viewer.get(monitor.get_absolute_url()).content.decode()
    assert "may be a clock or a counter" in page
    assert BUTTON not in page and 'name="entry"' not in page

    response = viewer.post(
        f"/monitors/{monitor.pk}/ignore-lines/", {"entry": "/^Last updated/"}
    )
    assert response.status_code == 403
    monitor.refresh_from_db()
    assert monitor.ignore_lines == []


def test_another_teams_monitor_cannot_be_changed(web, other_team, site):
    monitor, _ = watch(other_team, site)

    response = web.post(f"/monitors/{monitor.pk}/ignore-lines/", {"entry": "x"})

    assert response.status_code == 404
    monitor.refresh_from_db()
    assert monitor.ignore_lines == []


def test_the_parts_htmx_refreshes_while_checks_run_read_no_diffs(
    web, team, site, monkeypatch
):
    monitor, _ = watch(team, site)
    looked: list[Monitor] = []
    monkeypatch.setattr(ignore_suggestions, "suggestions_for", looked.append)

    for part in ("check-history", "changes-chart", "run-status"):
        response = web.get(
            monitor.get_absolute_url(),
            headers={"HX-Request": "true", "HX-Target": part},
        )
        assert response.status_code == 200
    assert looked == []
    web.get(monitor.get_absolute_url())
    assert looked == [monitor]


def test_a_second_view_reads_no_diffs_until_a_check_finishes_or_the_lines_change(
    web, team, site, monkeypatch
):
    monitor, _ = watch(team, site)
    run(monitor)
    checks_with_a_ticking_footer(monitor, site, CHECKS_LOOKED_AT)
    worked_out = ignore_suggestions._worked_out
    reads: list[Monitor] = []

    def counted(monitor: Monitor, check_ids: list) -> list:
        reads.append(monitor)
        return worked_out(monitor, check_ids)

    monkeypatch.setattr(ignore_suggestions, "_worked_out", counted)

    def view() -> list[str]:
        return shown_entries(web.get(monitor.get_absolute_url()).content.decode())

    assert view() == [FOOTER_ENTRY]
    assert view() == [FOOTER_ENTRY]
    assert len(reads) == 1
    checks_with_a_ticking_footer(monitor, site, 1)
    assert view() == [FOOTER_ENTRY]
    assert len(reads) == 2
    Monitor.objects.filter(pk=monitor.pk).update(ignore_lines=["Last updated"])
    assert view() == []
    assert len(reads) == 3


def test_no_more_lines_than_the_form_allows_can_be_added(web, team, site):
    monitor, _ = watch(team, site)
    full = [f"line {n}" for n in range(rules.IGNORE_LINES_MAX)]
    Monitor.objects.filter(pk=monitor.pk).update(ignore_lines=full)

    response = web.post(f"/monitors/{monitor.pk}/ignore-lines/", {"entry": "/^x$/"})

    assert response.status_code == 400
    said = f"Nothing was added: At most {rules.IGNORE_LINES_MAX} lines to ignore."
    assert said in response.content.decode()
    monitor.refresh_from_db()
    assert monitor.ignore_lines == full


def test_an_entry_the_monitor_has_already_is_not_added_twice(web, team, site):
    monitor, _ = watch(team, site)
    Monitor.objects.filter(pk=monitor.pk).update(ignore_lines=["/^x$/"])

    web.post(f"/monitors/{monitor.pk}/ignore-lines/", {"entry": ["/^x$/", "/^y$/"]})

    monitor.refresh_from_db()
    assert monitor.ignore_lines == ["/^x$/", "/^y$/"]
