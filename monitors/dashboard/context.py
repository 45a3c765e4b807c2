"""The dashboard's current team: people in several teams pick one, and the
choice is kept in their session. Every dashboard query is scoped to it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from monitors.models import Membership, Team

SESSION_KEY = "pagewatch_team_id"
_CACHE_ATTR = "_pagewatch_team"
_MEMBERSHIPS_ATTR = "_pagewatch_memberships"


def memberships_for(request: HttpRequest) -> list[Membership]:
    """The signed-in user's memberships with their teams (one query per
    request), in the order the team switcher lists them."""
    if not request.user.is_authenticated:
        return []
    if not hasattr(request, _MEMBERSHIPS_ATTR):
        memberships = (
            Membership.objects.filter(user=request.user)
            .select_related("team")
            .order_by("team__name", "team__pk")
        )
        setattr(request, _MEMBERSHIPS_ATTR, list(memberships))
    return getattr(request, _MEMBERSHIPS_ATTR)


def teams_for(request: HttpRequest) -> list[Team]:
    """The signed-in user's teams."""
    return [membership.team for membership in memberships_for(request)]


def current_membership(request: HttpRequest) -> Membership | None:
    """The signed-in user's membership of the current team: their role there."""
    team = current_team(request)
    if team is None:
        return None
    return next(m for m in memberships_for(request) if m.team_id == team.pk)


def current_team(request: HttpRequest) -> Team | None:
    """The team chosen in this session, or the user's first team.

    A stored id the user is no longer a member of is ignored, so removing a
    membership takes effect on the next request.
    """
    if hasattr(request, _CACHE_ATTR):
        return getattr(request, _CACHE_ATTR)
    teams = teams_for(request)
    chosen = request.session.get(SESSION_KEY) if teams else None
    team = next((t for t in teams if t.pk == chosen), teams[0] if teams else None)
    setattr(request, _CACHE_ATTR, team)
    return team


def switch_team(request: HttpRequest, team_id: Any) -> Team | None:
    """Make `team_id` current if the user belongs to it; returns it or None."""
    try:
        wanted = int(team_id)
    except (TypeError, ValueError):
        return None
    team = next((t for t in teams_for(request) if t.pk == wanted), None)
    if team is not None:
        request.session[SESSION_KEY] = team.pk
        setattr(request, _CACHE_ATTR, team)
    return team


_SECTIONS = {
    "team-history": "history",
    "api-keys": "api-keys",
    "api-key-revoke": "api-keys",
    "team-members": "team",
    "channels": "channels",
    "channel-create": "channels",
    "channel-edit": "channels",
    "webhook-secret-show": "team",
    "webhook-secret-rotate": "team",
    "team-invite": "team",
    "invitation-revoke": "team",
    "member-role": "team",
    "member-remove": "team",
    "team-activity": "activity",
    "team-retention": "team",
}
_MONITOR_PAGES = ("monitor-", "check-", "page-diff", "import-", "export")


def team(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the current team, the teams to switch between and
    the navigation section the page belongs to."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    match = getattr(request, "resolver_match", None)
    url_name = match.url_name if match else ""
    membership = current_membership(request)
    return {
        "current_team": current_team(request),
        "user_teams": teams_for(request),
        "membership": membership,
        # What the person may do here (`{% if can.edit %}`): buttons they may
        # not use are not shown; the views refuse them anyway (team_view).
        "can": membership.permissions if membership else {},
        "nav_section": _SECTIONS.get(url_name or "")
        or ("monitors" if (url_name or "").startswith(_MONITOR_PAGES) else ""),
    }
