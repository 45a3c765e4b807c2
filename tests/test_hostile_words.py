"""Words that strangers choose (page text and titles, judge reasons, error
messages, monitor, channel, key and team names, goals, import files) shown on
every dashboard page that names them, and never as markup: each page of the
dashboard is walked with a team whose every word is a script, and no page may
carry the script or the image tag as HTML."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from checks.models import Delivery
from monitors.models import ApiKey, Channel, ImportRun, Membership, Monitor
from tests.test_dashboard_views import make_check, make_monitor, make_page
from tests.test_tenancy_walk import NOT_WALKED, _named_routes

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(2)>'
HOSTILE = SCRIPT + BREAKOUT
# Addresses may hold no spaces: the same, without them.
IN_URL = '"><script>alert(1)</script>'
# What must never reach a page as markup.
RAW = ("<script>alert", "<img src=x", "onerror=alert(2)>")


def markup_in(body: str) -> list[str]:
    return [raw for raw in RAW if raw in body]


@pytest.fixture
def web(client, team, django_user_model):
    team.name = "Acme " + HOSTILE
    team.save()
    user = django_user_model.objects.create_user(
        "olive", "olive@example.com", "pw", first_name=HOSTILE
    )
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


@pytest.fixture
def ours(web, team) -> dict[str, object]:
    """One of each object a dashboard page shows, every word of it hostile,
    made through the dashboard where a form makes it (so the activity log
    records the hostile names too)."""
    response = web.post(
        reverse("channel-create"),
        {
            "kind": "webhook",
            "name": "Ops " + HOSTILE,
            "setting_url": "https://hooks.example.com/ops",
            "events": ["change"],
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    channel = Channel.objects.get(team=team)
    web.post(reverse("api-keys"), {"name": "CI " + HOSTILE, "scope": "read"})
    key = ApiKey.objects.get(team=team)
    monitor = make_monitor(
        team,
        name="Prices " + HOSTILE,
        goal="Tell me when " + HOSTILE,
        webhook={"url": "https://hooks.example.com/x?q=" + IN_URL},
        targets=[
            {"type": "scrape", "urls": ["https://example.com/p?q=" + IN_URL]},
            {"type": "crawl", "url": "https://example.com/"},
        ],
    )
    check = make_check(monitor)
    page = make_page(
        check,
        f"# Plans\n\n{HOSTILE} costs $19\n\n[link]({HOSTILE})",
        f"# Plans\n\n{HOSTILE} costs $24\n\n[link]({HOSTILE})",
        metadata={"title": "Title " + HOSTILE},
        url="https://example.com/p?q=" + IN_URL,
        judgment={
            "meaningful": True,
            "confidence": "high",
            "reason": "Because " + HOSTILE,
            "meaningfulChanges": [
                {"before": f"{HOSTILE} costs $19", "after": f"{HOSTILE} costs $24"}
            ],
        },
    )
    make_page(
        check,
        None,
        "",
        status="error",
        error="Could not read " + HOSTILE,
        url="https://example.com/broken?" + IN_URL,
    )
    delivery = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=monitor,
        check_run=check,
        event="monitor.check.completed",
        url="https://hooks.example.com/x?q=" + IN_URL,
        body="{}",
        status=Delivery.Status.FAILED,
        attempts=1,
        last_error="Receiver said " + HOSTILE,
    )
    exported = web.get(reverse("export")).content
    web.post(
        reverse("import-start"),
        {
            "source": "pagewatch",
            "file": SimpleUploadedFile(HOSTILE + ".json", exported),
        },
    )
    run = ImportRun.objects.get(team=team)
    web.post(reverse("team-invite"), {"email": "sam@example.com", "role": "editor"})
    return {
        "monitor": monitor,
        "check": check,
        "page": page,
        "target": monitor.targets.filter(type="crawl").get(),
        "channel": channel,
        "delivery": delivery,
        "key": key,
        "run": run,
    }


def _our_kwargs(name: str, params: list[str], ours: dict) -> dict[str, object]:
    by_param = {
        "check_id": ours["check"].pk,
        "page_id": ours["page"].pk,
        "target_id": ours["target"].pk,
        "delivery_id": ours["delivery"].pk,
        "key_id": ours["key"].pk,
    }
    if name.startswith("channel-"):
        by_param["pk"] = ours["channel"].pk
    elif name.startswith("import-"):
        by_param["pk"] = ours["run"].pk
    else:
        by_param["pk"] = ours["monitor"].pk
    return {p: by_param[p] for p in params if p in by_param}


def _pages(ours: dict) -> list[str]:
    """Every dashboard page a GET can open, with this team's objects."""
    urls = [
        reverse("monitor-list"),
        reverse("monitor-list") + "?q=" + "Prices",
        reverse("team-history"),
        reverse("team-activity"),
        reverse("team-members"),
        reverse("channels"),
        reverse("api-keys"),
        reverse("import-start"),
        reverse("two-factor"),
    ]
    for name, params in _named_routes():
        kwargs = _our_kwargs(name, params, ours)
        # An image of two screenshots: no words in it.
        if len(kwargs) == len(params) and name != "page-visual-change":
            urls.append(reverse(name, kwargs=kwargs))
    page = ours["page"].get_absolute_url()
    urls += [page + "?view=split", page + "?view=inline", page + "?view=text"]
    return urls


def test_no_dashboard_page_shows_hostile_words_as_markup(web, ours):
    opened = 0
    for url in _pages(ours):
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = web.get(url, **headers)
            if response.status_code == 405:
                continue
            assert response.status_code in (200, 286, 302), (url, response.status_code)
            body = response.content.decode(errors="replace")
            assert markup_in(body) == [], (url, headers, markup_in(body))
            opened += 1
    assert opened > 30
    # The words are there, as text.
    detail = web.get(ours["page"].get_absolute_url() + "?view=split").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in detail


def test_forms_sent_back_with_hostile_words_show_them_as_text(web, ours):
    monitor: Monitor = ours["monitor"]  # type: ignore[assignment]
    sent = [
        (reverse("channel-create"), {"kind": "webhook", "name": HOSTILE,
                                     "setting_url": HOSTILE}),
        (reverse("channel-edit", args=[ours["channel"].pk]),  # type: ignore[attr-defined]
         {"name": HOSTILE, "setting_url": "ftp://" + HOSTILE}),
        (reverse("monitor-create"), {"name": HOSTILE, "schedule": HOSTILE,
                                     "timezone": HOSTILE, "goal": HOSTILE,
                                     "target": ["t1"], "t1-type": "scrape",
                                     "t1-urls": HOSTILE}),
        (reverse("monitor-validate", args=[monitor.pk]),
         {"name": HOSTILE, "schedule": HOSTILE, "target": ["t1"],
          "t1-type": HOSTILE, "t1-urls": HOSTILE}),
        (reverse("team-invite"), {"email": HOSTILE, "role": HOSTILE}),
        (reverse("team-time-zone"), {"time_zone": HOSTILE}),
        (reverse("api-keys"), {"name": HOSTILE * 20, "scope": HOSTILE}),
        (reverse("import-start"), {"source": "pagewatch", "file": SimpleUploadedFile(
            HOSTILE + ".json", json.dumps({"monitors": HOSTILE}).encode())}),
        (reverse("import-start"), {"source": "changedetection", "file":
                                   SimpleUploadedFile(HOSTILE + ".zip", b"PK")}),
    ]  # fmt: skip
    for url, data in sent:
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = web.post(url, data, follow=True, **headers)
            body = response.content.decode(errors="replace")
            assert markup_in(body) == [], (url, headers, markup_in(body))
    previews = [
        reverse("schedule-preview") + "?schedule=" + HOSTILE + "&timezone=" + HOSTILE,
        reverse("target-row") + "?type=" + HOSTILE,
    ]
    for url in previews:
        body = web.get(url, HTTP_HX_REQUEST="true").content.decode(errors="replace")
        assert markup_in(body) == [], (url, markup_in(body))


def test_the_walk_leaves_out_only_routes_whose_address_is_a_credential():
    assert "capture" in NOT_WALKED and "monitor-detail" not in NOT_WALKED


def test_pages_opened_from_a_link_without_signing_in_show_hostile_words_as_text(
    client, team, django_user_model
):
    """The invitation, the e-mail consent pages and the feeds, which anyone
    holding the link opens: the team's, the inviter's, the monitor's and the
    channel's names as text."""
    from checks.notify import consent
    from monitors.models import EmailRecipient
    from teams.models import Invitation

    team.name = "Acme " + HOSTILE
    team.save()
    inviter = django_user_model.objects.create_user(
        "olive", "olive@example.com", "pw", first_name=HOSTILE
    )
    Membership.objects.create(team=team, user=inviter, role=Membership.Role.OWNER)
    _, invitation_token = Invitation.issue(
        team, "sam@example.com", "editor", inviter, timezone.now()
    )
    monitor = make_monitor(team, name="Prices " + HOSTILE)
    make_page(make_check(monitor), "a", HOSTILE, metadata={"title": HOSTILE})
    recipient = EmailRecipient.objects.create(
        monitor=monitor, email="ext@partner.example", status="pending", source="api"
    )
    channel = Channel.objects.create(
        team=team,
        name="Ops " + HOSTILE,
        kind="team_email",
        settings={"recipients": [inviter.pk]},
    )
    monitor.refresh_from_db()
    team.refresh_from_db()
    urls = [
        reverse("invitation-accept", args=[invitation_token]),
        reverse("email_confirm", args=[consent.confirm_token(recipient)]),
        reverse("email_unsubscribe", args=[consent.unsubscribe_token(recipient)]),
        reverse(
            "email_channel_unsubscribe",
            args=[consent.channel_token(channel.pk, [inviter.pk])],
        ),
        reverse("monitor-feed", args=[monitor.feed_token]),
        reverse("team-feed", args=[team.feed_token]),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode(errors="replace")
        assert markup_in(body) == [], (url, markup_in(body))
        assert "&lt;script&gt;" in body or "&amp;lt;script&amp;gt;" in body, url
