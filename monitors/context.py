"""The dashboard's current team: people in several teams pick one, and the
choice is kept in their session. Every dashboard query is scoped to it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from monitors.models import Team

SESSION_KEY = "pagewatch_team_id"
_CACHE_ATTR = "_pagewatch_team"
_TEAMS_ATTR = "_pagewatch_teams"


def teams_for(request: HttpRequest) -> list[Team]:
    """The signed-in user's teams (one query per request)."""
    if not request.user.is_authenticated:
        return []
    if not hasattr(request, _TEAMS_ATTR):
        teams = Team.objects.filter(membership__user=request.user).order_by(
            "name", "pk"
        )
        setattr(request, _TEAMS_ATTR, list(teams))
    return getattr(request, _TEAMS_ATTR)


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
    "webhook-secret-show": "team",
    "webhook-secret-rotate": "team",
}
_MONITOR_PAGES = ("monitor-", "check-", "page-diff", "import-", "export")


def team(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the current team, the teams to switch between and
    the navigation section the page belongs to."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    match = getattr(request, "resolver_match", None)
    url_name = match.url_name if match else ""
    return {
        "current_team": current_team(request),
        "user_teams": teams_for(request),
        "nav_section": _SECTIONS.get(url_name or "")
        or ("monitors" if (url_name or "").startswith(_MONITOR_PAGES) else ""),
    }
