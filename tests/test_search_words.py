"""A web search speaks one vocabulary: its rows say "New match", "Not
relevant", "Seen before", and so do the filters above them, the counts in the
monitor list and check history, "meaningful changes only", the chart and the
e-mail subject. Real checks against a stand-in search engine and model."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from monitors.models import Membership, Monitor
from tests.searching import hit
from tests.test_search_checks import make_monitor, run_check

pytest_plugins = ["tests.searching", "tests.notifying"]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@acme.test", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


def text_of(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())


@pytest.fixture
def searched(team, searx, model, news):
    """Two checks of a web search: the first finds a launch (a new match) and
    earnings (not relevant); the second finds both again."""
    searx.results(
        "acme",
        hit(news["launch"], "Acme launches the Rocket"),
        hit(news["earnings"], "Acme earnings"),
    )
    monitor = make_monitor(team, ["acme"])
    return run_check(monitor), run_check(monitor)


def test_a_search_check_page_filters_in_the_words_of_its_rows(web, searched):
    first, _ = searched
    words = text_of(web.get(first.get_absolute_url()))
    assert "Meaningful changes 1" in words  # the judge reported the match
    assert "New matches 1" in words and "Not relevant 1" in words
    assert "Unchanged" not in words and "New 1" not in words

    matches = text_of(web.get(first.get_absolute_url(), {"status": "search-alert"}))
    assert "Acme launches the Rocket" in matches
    assert "Acme earnings" not in matches


def test_search_counts_and_the_meaningful_filter_speak_of_matches(web, searched):
    first, second = searched
    monitor = first.monitor
    listed = text_of(web.get(reverse("monitor-list")))
    assert "1 seen before" in listed and "1 not relevant" in listed
    assert "unchanged" not in listed

    page = web.get(monitor.get_absolute_url())
    assert "1 new match" in text_of(page)
    assert 'class="bar-changed"' in page.content.decode()  # the match is charted

    meaningful = web.get(monitor.get_absolute_url(), {"changes": "meaningful"})
    checks = meaningful.content.decode().split('id="check-history"', 1)[1]
    assert first.get_absolute_url() in checks
    assert second.get_absolute_url() not in checks


def test_the_api_keeps_its_wire_summary(api, searched):
    _, second = searched
    body = api.get(f"/v2/monitor/{second.monitor_id}").json()["data"]
    assert body["lastCheckSummary"] == {
        "totalPages": 2, "same": 2, "changed": 0, "new": 0, "removed": 0, "error": 0
    }  # fmt: skip


def test_a_search_e_mail_counts_new_matches(
    team,
    django_user_model,
    searx,
    model,
    news,
    queued,
    mailoutbox,
    django_capture_on_commit_callbacks,
):
    team.members.add(django_user_model.objects.create_user("mia", "mia@acme.test"))
    searx.results("acme", hit(news["launch"], "Acme launches the Rocket"))
    monitor = make_monitor(team, ["acme"])
    email = {"enabled": True, "recipients": [], "includeDiffs": False}
    Monitor.objects.filter(pk=monitor.pk).update(notification={"email": email})
    monitor.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        run_check(monitor)
    queued.run()

    [mail] = mailoutbox
    assert mail.subject.endswith(": 1 new match")
    assert "[new match]" in mail.body


@pytest.mark.parametrize("code", [403, 429])
def test_searxngs_refusals_of_its_set_up_are_plain_in_messages_and_whole_elsewhere(
    code,
):
    from types import SimpleNamespace

    from checks.search.providers.searxng import SearxngProvider
    from monitors.search_provider import in_message_words, in_plain_words

    provider = SearxngProvider("http://searx.test/")
    refused = provider.refused(SimpleNamespace(status_code=code, content=b""))
    error = f"The web search failed: “acme”: {refused} The page could not be checked."

    assert in_plain_words(error) == error
    assert in_message_words(error) == (
        "The web search failed: “acme”: the web search service refused the "
        "request; an administrator needs to check its set-up. The page could "
        "not be checked."
    )
