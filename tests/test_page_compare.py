"""Comparing a page with an older version of it: the earlier versions offered
on its diff view, and the chosen one's changes rendered from the two stored
copies, shareable by address and safe with any address."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from checks.content import render
from checks.models import PageResult
from monitors.models import Membership
from tests import test_dashboard_views as views
from tests.test_dashboard_views import PASSWORD, make_check, make_page, text_of

pytestmark = pytest.mark.django_db

# The dashboard tests' people and monitors.
fast_password_hashing = views.fast_password_hashing
owner = views.owner
web = views.web
monitor = views.monitor
other_monitor = views.other_monitor

V1 = "# Plans\n\nPro costs $19 a month.\n\nContact us."
V2 = "# Plans\n\nPro costs $21 a month.\n\nContact us."
V3 = "# Plans\n\nPro costs $24 a month.\n\nContact us by mail."


def version(monitor, before, after, days_ago, **fields) -> PageResult:
    check = make_check(monitor)
    page = make_page(check, before, after, **fields)
    moment = timezone.now() - timedelta(days=days_ago)
    PageResult.objects.filter(pk=page.pk).update(created_at=moment)
    page.created_at = moment
    return page


@pytest.fixture
def history(monitor):
    """Three versions of the pricing page: new two weeks ago, changed a week
    ago, changed today."""
    first = version(monitor, None, V1, 14)
    second = version(monitor, V1, V2, 7)
    latest = version(monitor, V2, V3, 0)
    return first, second, latest


def test_the_diff_view_lists_the_pages_earlier_versions_newest_first(web, history):
    first, second, latest = history

    body = text_of(web.get(latest.get_absolute_url()))

    assert "Compare with" in body
    assert body.index(f'value="{second.pk}"') < body.index(f'value="{first.pk}"')
    assert f'value="{latest.pk}"' not in body  # not itself
    assert "compare=" not in body.split("Compare with")[0]


def test_choosing_an_older_version_shows_the_changes_since_it(web, history):
    first, _, latest = history

    response = web.get(latest.get_absolute_url(), {"compare": first.pk})

    assert response.status_code == 200
    body = text_of(response)
    assert "Changes since the version of" in body
    assert '<del class="word-change">$19</del>' in body
    assert '<ins class="word-change">$24</ins>' in body
    assert f'value="{first.pk}" selected' in body


@pytest.mark.parametrize("layout", ["split", "inline"])
def test_the_side_by_side_and_one_column_views_compare_with_the_chosen_version(
    web, history, layout
):
    first, _, latest = history

    body = text_of(
        web.get(latest.get_absolute_url(), {"compare": first.pk, "view": layout})
    )

    assert "<del>19</del>" in body and "<ins>24</ins>" in body
    # The layout links keep the choice, so a shared address shows the same.
    assert f"compare={first.pk}&view=text" in body


def test_a_same_page_can_be_compared_with_an_older_version(web, monitor, history):
    first, _, latest = history
    same = version(
        monitor,
        None,
        V3,
        0,
        status="same",
        current_snapshot=latest.current_snapshot,
    )

    body = text_of(
        web.get(same.get_absolute_url(), {"compare": first.pk, "view": "split"})
    )

    assert "<del>19</del>" in body and "<ins>24</ins>" in body


@pytest.mark.parametrize(
    "bad", ["nonsense", "9b1f7c1e-7a4e-4c1a-9d55-3f6c1b2a7e10", "", "1"]
)
def test_a_bad_version_is_a_plain_message(web, history, bad):
    _, _, latest = history

    response = web.get(latest.get_absolute_url(), {"compare": bad})

    assert response.status_code == 200
    body = text_of(response)
    if bad:
        assert "That earlier version of this page is not kept" in body
    assert "Changes since the version of" not in body


def test_another_teams_version_is_not_shown(web, history, other_monitor):
    _, _, latest = history
    foreign = version(other_monitor, None, "Globex secret plans", 3)

    body = text_of(web.get(latest.get_absolute_url(), {"compare": foreign.pk}))

    assert "That earlier version of this page is not kept" in body
    assert "Globex" not in body


def test_another_pages_or_a_later_version_is_not_shown(web, monitor, history):
    first, second, latest = history
    elsewhere = version(monitor, None, "Team page", 3, url="https://example.com/team")

    for chosen in (elsewhere, latest):
        body = text_of(web.get(second.get_absolute_url(), {"compare": chosen.pk}))
        assert "That earlier version of this page is not kept" in body
    assert "Team page" not in body


def test_a_version_gone_by_retention_is_a_plain_message(web, history):
    first, _, latest = history
    first.check_run.delete()

    response = web.get(latest.get_absolute_url(), {"compare": first.pk})

    assert response.status_code == 200
    assert "That earlier version of this page is not kept" in text_of(response)


def test_a_version_whose_copy_is_gone_is_not_offered(web, history):
    first, second, latest = history
    PageResult.objects.filter(pk=first.pk).update(current_snapshot=None)

    body = text_of(web.get(latest.get_absolute_url()))

    assert f'value="{second.pk}"' in body and f'value="{first.pk}"' not in body


def test_a_viewer_can_compare(client, team, history, django_user_model):
    first, _, latest = history
    viewer = django_user_model.objects.create_user("vera", "v@example.com", PASSWORD)
    Membership.objects.create(team=team, user=viewer, role=Membership.Role.VIEWER)
    client.force_login(viewer)

    body = text_of(
        client.get(latest.get_absolute_url(), {"compare": first.pk, "view": "split"})
    )

    assert "<del>19</del>" in body and "<ins>24</ins>" in body


def test_the_list_is_bounded_and_keeps_the_oldest_version_reachable(web, monitor):
    pages = [version(monitor, None, f"Version {n}", 100 - n) for n in range(60)]
    latest = version(monitor, "Version 59", "Version 60", 0)

    body = text_of(web.get(latest.get_absolute_url()))

    offered = [p for p in pages if f'value="{p.pk}"' in body]
    assert len(offered) == 51
    assert pages[0] in offered  # the oldest kept
    assert pages[1] not in offered
    assert pages[-1] in offered


@pytest.fixture
def matcher_calls(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = render.difflib.SequenceMatcher

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:
            calls.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(render, "difflib", SimpleNamespace(SequenceMatcher=Counting))
    return calls


def test_comparing_unrelated_versions_matches_no_lines_word_by_word(
    web, monitor, matcher_calls
):
    old = "\n\n".join(f"alpha beta gamma {n} delta" for n in range(300))
    new = "\n\n".join(f"zulu yankee {n} xray whiskey" for n in range(300))
    first = version(monitor, None, old, 10)
    latest = version(monitor, old, new + "\n\nend", 0)

    body = text_of(
        web.get(latest.get_absolute_url(), {"compare": first.pk, "view": "split"})
    )

    assert body.count('class="diff-changed"') > 200
    assert matcher_calls == []


def test_comparing_renders_only_the_chosen_versions_changes(web, history, monkeypatch):
    """The check's own changes are hidden while comparing: not built at all."""
    from monitors.dashboard import checks as view_module
    from monitors.dashboard import page_compare

    first, _, latest = history
    calls: list[int] = []
    real = page_compare.render_side_by_side

    def counting(old: str, new: str) -> str:
        calls.append(1)
        return real(old, new)

    monkeypatch.setattr(view_module, "render_side_by_side", counting)
    monkeypatch.setattr(page_compare, "render_side_by_side", counting)

    web.get(latest.get_absolute_url(), {"compare": first.pk, "view": "split"})
    assert calls == [1]

    web.get(latest.get_absolute_url(), {"view": "split"})
    assert calls == [1, 1]


@pytest.mark.parametrize("query", ["versions_before", "history_of"])
def test_a_pages_versions_are_read_from_the_page_index(history, query):
    """Looked up by target and address, not by walking every check of the
    monitor and each check's pages."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the plan asserted is PostgreSQL's")
    latest = history[2]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = getattr(PageResult.objects, query)(latest).explain()

    assert "page_target_url_idx" in plan, plan
