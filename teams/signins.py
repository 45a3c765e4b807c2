"""Sign-ins and failed sign-ins in each team's activity log. Django tells of
them only through its auth signals (the dashboard's, the admin's and single
sign-on's alike), so these two receivers are the one place they are heard;
they only write the entries."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest

from config.signin import client_ip
from teams.activity import Actor, Kind, Via, record_in_their_teams


def _via(request: HttpRequest | None) -> str:
    if request is not None and request.path_info.startswith("/admin/"):
        return Via.ADMIN
    return Via.DASHBOARD


def signed_in(
    sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any
) -> None:
    if request is None:
        return
    actor = Actor(_via(request), user=user, address=client_ip(request))
    record_in_their_teams(actor, Kind.SIGNED_IN)


def sign_in_failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None,
    **kwargs: Any,
) -> None:  # fmt: skip
    """A wrong password for a team member's user name: each of their teams
    hears of it, with the address it came from. Unknown names belong to no
    team and are left to the sign-in throttle's own log."""
    if request is None:
        return
    username = str(credentials.get("username") or "")[:150]
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        return
    actor = Actor(_via(request), user=user, address=client_ip(request))
    record_in_their_teams(actor, Kind.SIGN_IN_FAILED)
