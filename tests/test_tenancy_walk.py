"""Every dashboard route that names an object, walked with another team's
objects: each answers 404 (or 405 for a method it does not take) to GET, to
POST and to an htmx request, and nothing of the other team changes. Routes
added later are walked too; a route naming an object this walk cannot fill
fails the walk until it is taught the object."""

from __future__ import annotations

import re

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
            ("put", {}),
            ("patch", {"HTTP_HX_REQUEST": "true"}),
            ("delete", {"HTTP_HX_REQUEST": "true"}),
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


@pytest.fixture
def mine(team) -> dict[str, object]:
    """The signed-in team's own monitor, to name beside another team's
    checks, pages, targets and deliveries: a view that looks the parent up
    through the team and the child by its id alone shows the other's."""
    monitor = make_monitor(team, name="Acme pricing")
    return {"monitor": monitor, "check": make_check(monitor)}


def test_another_teams_objects_under_ones_own_monitor_answer_404(web, mine, theirs):
    checked = 0
    for name, params in _named_routes():
        if "pk" not in params or len(params) == 1:
            continue
        if name.startswith(("channel-", "import-")):
            continue
        kwargs = _kwargs(name, params, theirs) | {"pk": mine["monitor"].pk}
        if "page_id" in params:
            # Their page, under our monitor and our check as well.
            variants = [kwargs, kwargs | {"check_id": mine["check"].pk}]
        else:
            variants = [kwargs]
        for kwargs in variants:
            url = reverse(name, kwargs=kwargs)
            for method, headers in (
                ("get", {}),
                ("post", {}),
                ("post", {"HTTP_HX_REQUEST": "true"}),
            ):
                response = getattr(web, method)(url, **headers)
                assert response.status_code in (404, 405), (name, method, kwargs)
                assert b"Globex" not in response.content, (name, method)
            checked += 1
    assert checked >= 6
    assert Delivery.objects.get(pk=theirs["delivery"].pk).attempts == 1


# ---------------------------------------------------------------- the API


def _v2_routes_with_ids() -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []

    def walk(patterns: list, prefix: str) -> None:
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, route)
            elif route.startswith("v2/") and entry.pattern.converters:
                found.append((route, list(entry.pattern.converters)))

    walk(get_resolver().url_patterns, "")
    return found


def _v2_path(route: str, ids: dict[str, object]) -> str:
    def fill(match) -> str:
        assert match[1] in ids, f"{route}: teach this walk the object behind {match[1]}"
        return str(ids[match[1]])

    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", fill, route)


def test_another_teams_objects_answer_404_on_every_api_route(api, team, theirs):
    mine = make_monitor(team, name="Acme pricing")
    theirs_ids = {
        "monitor_id": theirs["monitor"].pk,
        "check_id": theirs["check"].pk,
        "channel_id": theirs["channel"].pk,
        "import_id": theirs["run"].pk,
    }
    routes = _v2_routes_with_ids()
    assert {r for r, _ in routes} >= {
        "v2/monitor/<str:monitor_id>/checks/<str:check_id>",
        "v2/channels/<str:channel_id>/test",
        "v2/import/<str:import_id>",
    }
    for route, params in routes:
        paths = {_v2_path(route, theirs_ids)}
        if "check_id" in params:  # their check under our monitor
            paths.add(_v2_path(route, theirs_ids | {"monitor_id": mine.pk}))
        for path in paths:
            for method in ("get", "post", "put", "patch", "delete"):
                response = getattr(api, method)(path, {"name": "Stolen"}, format="json")
                assert response.status_code in (404, 405), (path, method)
                assert b"Globex" not in response.content, (path, method)

    monitor = Monitor.objects.get(pk=theirs["monitor"].pk)
    assert monitor.name == "Globex secret plans" and monitor.deleted_at is None
    assert Check.objects.filter(monitor=monitor).count() == 1
    assert Channel.objects.get(pk=theirs["channel"].pk).name == "Globex ops"
    assert not Delivery.objects.exclude(pk=theirs["delivery"].pk).exists()


# ---------------------------------------------------------------- roles


def _team_routes() -> list[tuple[str, list[str]]]:
    """(name, parameters) of every dashboard route that goes through
    team_view, with or without parameters."""
    found: list[tuple[str, list[str]]] = []

    def walk(patterns: list, prefix: str) -> None:
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                if not route.startswith(("v2/", "admin/")):
                    walk(entry.url_patterns, route)
            elif entry.name and hasattr(entry.callback, "team_action"):
                found.append((entry.name, list(entry.pattern.converters)))

    walk(get_resolver().url_patterns, "")
    return found


def test_a_viewer_is_refused_every_change_by_the_server_not_only_the_page(
    client, other_team, theirs, django_user_model
):
    """The team's own objects, a viewer of the team, and every request that
    may change something on every team route: refused (403) or not taken
    (405), whatever the page shows, and nothing changes."""
    from tests.test_roles import state

    vera = django_user_model.objects.create_user("vera", "vera@example.com", "pw")
    Membership.objects.create(team=other_team, user=vera, role=Membership.Role.VIEWER)
    client.force_login(vera)
    before = state()
    refused = 0
    for name, params in _team_routes():
        url = reverse(name, kwargs=_kwargs(name, params, theirs))
        for method, headers in (
            ("post", {}),
            ("post", {"HTTP_HX_REQUEST": "true"}),
            ("put", {}),
            ("patch", {}),
            ("delete", {}),
        ):
            response = getattr(client, method)(
                url,
                {"role": "owner", "status": "paused", "name": "Viewer was here",
                 "required": "on", "feeds": "off", "email": "v@example.com",
                 "activity_retention_days": "730", "time_zone": "Asia/Tokyo"},
                **headers,
            )  # fmt: skip
            assert response.status_code in (403, 405), (name, method)
            refused += response.status_code == 403
    assert refused > 20
    assert state() == before
    assert not Monitor.objects.filter(name="Viewer was here").exists()
    other_team.refresh_from_db()
    assert other_team.time_zone != "Asia/Tokyo"


def _declared(name: str, params: list[str], theirs: dict) -> tuple:
    """What a route's view declares it needs (team_view's needs, to_change)."""
    url = reverse(name, kwargs=_kwargs(name, params, theirs))
    return get_resolver().resolve(url).func.team_action


def test_an_editor_is_refused_every_owners_change_by_the_server(
    client, other_team, theirs, django_user_model
):
    """As above for an editor, on every route that declares it needs an
    owner (members, invitations, keys, the secret, the team's settings)."""
    from tests.test_roles import state

    eddie = django_user_model.objects.create_user("eddie", "eddie@example.com", "pw")
    Membership.objects.create(team=other_team, user=eddie, role=Membership.Role.EDITOR)
    client.force_login(eddie)
    before = state()
    # Removing someone else needs an owner too, checked inside the view
    # (anyone may remove themselves: leaving).
    owners_routes = [
        (name, params)
        for name, params in _team_routes()
        if Membership.Action.MANAGE in _declared(name, params, theirs)
        or name == "member-remove"
    ]
    assert {n for n, _ in owners_routes} >= {
        "member-role", "member-remove", "team-invite", "api-key-revoke",
        "webhook-secret-rotate", "team-time-zone", "api-keys",
    }  # fmt: skip
    for name, params in owners_routes:
        url = reverse(name, kwargs=_kwargs(name, params, theirs))
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = client.post(
                url,
                {"role": "owner", "name": "Editor was here", "required": "on",
                 "feeds": "off", "email": "e@example.com",
                 "activity_retention_days": "730", "time_zone": "Asia/Tokyo"},
                **headers,
            )  # fmt: skip
            assert response.status_code == 403, (name, headers)
    assert state() == before
    assert Membership.objects.get(user=eddie).role == Membership.Role.EDITOR
