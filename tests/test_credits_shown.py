"""Credits are shown only to a team that has a monthly allowance, and then
explained in one line where they appear (issue #21.7): a self-hosted team
pays nobody, and "credits" in its pages and e-mails only puzzled people."""

from __future__ import annotations

import re

import pytest

from checks.models import Check
from monitors.models import Membership
from tests.notifying import make_monitor as make_notified_monitor
from tests.test_dashboard_views import PASSWORD, make_check, make_monitor, text_of

pytest_plugins = ["tests.notifying"]
pytestmark = pytest.mark.django_db

CREDIT = re.compile(r"credit", re.IGNORECASE)
EXPLAINED = "Credits count how much checking your team does"


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "o@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


@pytest.fixture
def allowance(team):
    team.credit_allowance = 50_000
    team.save()
    return team.credit_allowance


def pages_of(web, monitor, check) -> dict[str, str]:
    return {
        "monitor": text_of(web.get(monitor.get_absolute_url())),
        "check": text_of(web.get(check.get_absolute_url())),
        "form": text_of(web.get(f"{monitor.get_absolute_url()}edit/")),
        "new crawl row": text_of(web.get("/monitors/target-row/?type=crawl")),
    }


def test_a_team_without_an_allowance_never_reads_the_word_credit(web, team):
    monitor = make_monitor(team, goal="Price changes")
    pages = pages_of(web, monitor, make_check(monitor, actual_credits=7))
    for name, page in pages.items():
        assert not CREDIT.search(page), name


def test_a_team_with_an_allowance_sees_credits_explained_in_one_line(
    web, team, allowance, settings
):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    monitor = make_monitor(team, goal="Price changes")
    pages = pages_of(web, monitor, make_check(monitor, actual_credits=7))
    assert "Up to <strong>2880</strong> credits a month" in pages["monitor"]
    assert f"your team may use {allowance} a month" in pages["monitor"]
    assert EXPLAINED in pages["monitor"] and EXPLAINED in pages["check"]
    assert re.search(r"<dt>Credits</dt><dd>7 ", pages["check"])
    assert "Each judged page uses one extra credit." in pages["form"]


def test_the_monthly_estimate_counts_the_judge_only_when_an_llm_is_configured(
    web, team, allowance, settings
):
    settings.LLM_BASE_URL = ""
    monitor = make_monitor(team, goal="Price changes")
    page = text_of(web.get(monitor.get_absolute_url()))
    assert "Up to <strong>1440</strong> credits a month" in page


def test_change_mails_mention_credits_only_with_an_allowance(
    team, scenario, queued, mailoutbox, django_user_model
):
    # A member: credits are the team's business, not a stranger's.
    team.members.add(django_user_model.objects.create_user("a", "a@acme.test"))
    monitor = make_notified_monitor(
        team, email={"enabled": True, "recipients": ["a@acme.test"]}
    )
    monitor.email_recipients.update(status="confirmed")
    changes = [("https://example.com/pricing", "changed")]

    Check.objects.filter(pk=scenario.run(monitor, changes).pk).update(actual_credits=3)
    queued.run()
    team.credit_allowance = 1000
    team.save()
    Check.objects.filter(pk=scenario.run(monitor, changes).pk).update(actual_credits=3)
    queued.run()

    without, with_allowance = mailoutbox
    assert not CREDIT.search(without.body)
    assert not CREDIT.search(without.alternatives[0][0])
    line = "Credits used: 3 (of the 1000 your team may use a month)"
    assert line in with_allowance.body and line in with_allowance.alternatives[0][0]
