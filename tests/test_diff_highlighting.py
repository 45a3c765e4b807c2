"""Word-level highlighting is paid only when a diff is viewed, and only for
lines that evidently belong together: asserted on the word matchers started."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from checks.content import render
from checks.models import PageResult
from monitors.models import Membership
from tests import test_diff_packing
from tests.test_diff_packing import prose
from tests.test_runner import make_monitor, page_of, run_check

pytestmark = pytest.mark.django_db

# Pages of random words from one small vocabulary, shared with the packing
# tests; the fixture allowing loopback pages comes with them.
private_targets_allowed = test_diff_packing.private_targets_allowed


@pytest.fixture
def matcher_calls(monkeypatch) -> list[int]:
    """How many word matchers the diff renderer starts (the line matcher of
    checks.content.compare uses the same library: it is not counted)."""
    calls: list[int] = []
    real = render.difflib.SequenceMatcher

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:
            calls.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(render, "difflib", SimpleNamespace(SequenceMatcher=Counting))
    return calls


def test_a_check_does_no_word_level_highlighting(team, site, matcher_calls):
    url = site.html("/x", "X", prose(1, 30))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/x", "X", prose(1, 30).replace("price", "cost"))

    page = page_of(run_check(monitor), url)

    assert page.status == PageResult.Status.CHANGED
    assert matcher_calls == []


def test_the_diff_view_of_a_rewritten_1_mb_page_matches_no_unrelated_lines(
    client, team, django_user_model, site, matcher_calls
):
    url = site.html("/big", "Big", prose(1, 2_500, 60))
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/big", "Big", prose(2, 2_500, 60) + "<p>price plan team</p>")
    page = page_of(run_check(monitor), url)
    assert len(page.current_snapshot.text) > 1_000_000
    user = django_user_model.objects.create_user("olive", "o@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)

    response = client.get(page.get_absolute_url() + "?view=split")

    assert response.status_code == 200
    body = response.content.decode()
    assert 'class="diff diff-split' in body and "<del>" in body and "<ins>" in body
    # Hundreds of paired lines (as far as the view shows the page), each
    # sharing its words but not its wording: none is worth matching word by
    # word (a short line or two at the cut may be).
    rows = body.count('class="diff-changed"')
    assert rows > 400
    assert len(matcher_calls) < rows / 100


def test_rendering_all_of_a_rewritten_1_mb_page_matches_no_unrelated_lines(
    matcher_calls,
):
    before = prose(1, 2_500, 60).replace("<p>", "").replace("</p>", "\n\n")
    after = prose(2, 2_500, 60).replace("<p>", "").replace("</p>", "\n\n")
    assert len(after) > 1_000_000

    html = render.render_side_by_side(before, after)

    assert html.count('class="diff-changed"') == 2_500  # every paragraph paired
    assert len(matcher_calls) < 2_500 / 100


def test_the_diff_view_still_highlights_the_words_of_an_edited_line(
    client, team, django_user_model, site, matcher_calls
):
    url = site.html("/p", "P", "<p>Starter costs $19 a month for every team.</p>")
    monitor = make_monitor(team, [url])
    run_check(monitor)
    site.html("/p", "P", "<p>Starter costs $24 a month for every team.</p>")
    page = page_of(run_check(monitor), url)
    user = django_user_model.objects.create_user("olive", "o@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)

    body = client.get(page.get_absolute_url() + "?view=split").content.decode()

    assert "<del>19</del>" in body and "<ins>24</ins>" in body
    assert len(matcher_calls) == 1


def test_a_chinese_line_is_highlighted_character_by_character(matcher_calls):
    html = render.render_side_by_side(
        "价格是每月十九美元，包括税。\n", "价格是每月三十美元，包括税。\n"
    )

    assert "价格是每月<ins>三</ins>十<ins>" not in html
    assert '<td class="diff-text diff-del">价格是每月十<del>九</del>美元' in html
    assert '<td class="diff-text diff-ins">价格是每月<ins>三</ins>十美元' in html
    assert len(matcher_calls) == 1
