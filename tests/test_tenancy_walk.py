"""Every dashboard route that names an object, walked with another team's
objects: each answers 404 (or 405 for a method it does not take) to GET, to
POST and to an htmx request, and nothing of the other team changes. Routes
added later are walked too; a route naming an object this walk cannot fill
fails the walk until it is taught the object."""

from __future__ import annotations

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from checks.models import Check, Delivery
from monitors.models import ApiKey, Channel, ImportRun, Membership, Monitor, Team
from teams.models import Invitation
from tests.test_dashboard_views import make_check, make_monitor, make_page

pytestmark = pytest.mark.django_db

# Routes whose address holds a credential rather than an object of a team
# (their own tests cover them), and the API and admin (tests/test_auth.py,
# tests/test_api_*.py, tests/test_admin.py).
NOT_WALKED = {
    "monitor-feed",
    "team-feed",
    "capture",
    "email_confirm",
    "email_unsubscribe",
    "email_unsubscribe_one_click",
    "email_channel_unsubscribe",
    "email_channel_unsubscribe_one_click",
    "invitation-accept",
    "password_reset_confirm",
}


def _named_routes() -> list[tuple[str, list[str]]]:
    """(route name, its parameters) of every named route outside /v2/ and
    /admin/ that takes parameters."""
    found: list[tuple[str, list[str]]] = []

    def walk(patterns: list, prefix: str) -> None:
        for entry in patterns:
            if isinstance(entry, URLResolver):
                route = prefix + str(entry.pattern)
                if route.startswith(("v2/", "admin/")):
                    continue
                walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern) and entry.name:
                params = list(entry.pattern.converters)
                if params and entry.name not in NOT_WALKED:
                    found.append((entry.name, params))

    walk(get_resolver().url_patterns, "")
    return found


@pytest.fixture
def web(client, team, django_user_model):
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    return client


@pytest.fixture
def theirs(other_team: Team, django_user_model) -> dict[str, object]:
    """One of each object of another team that a dashboard route can name."""
    oscar = django_user_model.objects.create_user("oscar", "oscar@example.com", "pw")
    membership = Membership.objects.create(
        team=other_team, user=oscar, role=Membership.Role.OWNER
    )
    monitor = make_monitor(
        other_team,
        name="Globex secret plans",
        webhook={"url": "https://hooks.example.com/globex"},
    )
    check = make_check(monitor)
    page = make_page(check, "a", "b")
    channel = Channel.objects.create(
        team=other_team,
        name="Globex ops",
        kind="webhook",
        settings={"url": "https://hooks.example.com/ops"},
    )
    delivery = Delivery.objects.create(
        kind=Delivery.Kind.WEBHOOK,
        monitor=monitor,
        check_run=check,
        event="monitor.check.completed",
        url="https://hooks.example.com/globex",
        body="{}",
        status=Delivery.Status.FAILED,
        attempts=1,
    )
    key, _ = ApiKey.issue(other_team, name="globex")
    invitation, _ = Invitation.issue(
        other_team, "newbie@example.com", "editor", oscar, timezone.now()
    )
    run = ImportRun.objects.create(team=other_team, source="firecrawl")
    return {
        "monitor": monitor,
        "check": check,
        "page": page,
        "target": monitor.targets.get(),
        "channel": channel,
        "delivery": delivery,
        "key": key,
        "membership": membership,
        "invitation": invitation,
        "run": run,
    }


def _kwargs(name: str, params: list[str], theirs: dict) -> dict[str, object]:
    by_param = {
        "check_id": theirs["check"].pk,
        "page_id": theirs["page"].pk,
        "target_id": theirs["target"].pk,
        "delivery_id": theirs["delivery"].pk,
        "key_id": theirs["key"].pk,
        "membership_id": theirs["membership"].pk,
        "invitation_id": theirs["invitation"].pk,
    }
    if name.startswith("channel-"):
        by_param["pk"] = theirs["channel"].pk
    elif name.startswith("import-"):
        by_param["pk"] = theirs["run"].pk
    else:
        by_param["pk"] = theirs["monitor"].pk
    missing = [p for p in params if p not in by_param]
    assert not missing, f"{name}: teach this walk the object behind {missing}"
    return {p: by_param[p] for p in params}


def test_the_walk_covers_every_kind_of_object_a_route_names():
    names = {name for name, _ in _named_routes()}
    for expected in (
        "monitor-detail",
        "page-diff",
        "page-visual-change",
        "delivery-retry",
        "channel-test",
        "api-key-revoke",
        "member-role",
        "invitation-revoke",
        "import-confirm",
        "site-pages",
        "monitor-feed-renew",
    ):
        assert expected in names


def test_another_teams_objects_answer_404_on_every_dashboard_route(web, theirs):
    monitor, channel = theirs["monitor"], theirs["channel"]
    feed_token = Monitor.objects.get(pk=monitor.pk).feed_token
    for name, params in _named_routes():
        url = reverse(name, kwargs=_kwargs(name, params, theirs))
        for method, headers in (
            ("get", {}),
            ("post", {}),
            ("post", {"HTTP_HX_REQUEST": "true"}),
        ):
            response = getattr(web, method)(
                url, {"role": "viewer", "status": "paused"}, **headers
            )
            assert response.status_code in (404, 405), (name, method)
            assert b"Globex" not in response.content, (name, method)

    monitor.refresh_from_db()
    assert monitor.is_active and monitor.deleted_at is None
    assert monitor.feed_token == feed_token
    assert Check.objects.filter(monitor=monitor).count() == 1
    assert Channel.objects.filter(pk=channel.pk).exists()
    assert Delivery.objects.get(pk=theirs["delivery"].pk).attempts == 1
    assert ApiKey.objects.get(pk=theirs["key"].pk).is_active
    assert Membership.objects.get(pk=theirs["membership"].pk).role == "owner"
    invitation = Invitation.objects.get(pk=theirs["invitation"].pk)
    assert invitation.revoked_at is None
    assert ImportRun.objects.get(pk=theirs["run"].pk).status == theirs["run"].status
