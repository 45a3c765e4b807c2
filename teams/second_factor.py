"""A second factor for password sign-ins: TOTP (an authenticator app) with
ten single-use recovery codes, through django-otp's devices.

Optional per person; an owner can make it required for everyone in a team.
Sign-ins through single sign-on are left to the identity provider's own
factors. The dashboard and the admin both ask for it (SecondFactorMiddleware):
a signed-in session that has not shown a code reaches only the pages for
entering one (or setting one up) and signing out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from monitors.models import Team

RECOVERY_CODES = 10
SSO_BACKEND = "teams.sso.Backend"


def authenticator(user: Any) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=True).first()


def required_by(user: Any) -> list[Team]:
    """The user's teams that ask everyone for a second factor."""
    return list(Team.objects.filter(membership__user=user, require_second_factor=True))


def start_setup(user: Any) -> TOTPDevice:
    """A new, not yet confirmed authenticator: it counts once a code from
    the app has been entered (confirm)."""
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
    return TOTPDevice.objects.create(
        user=user, name="Authenticator app", confirmed=False
    )


def confirm(device: TOTPDevice, token: str) -> list[str] | None:
    """Turn the authenticator on if `token` is right: returns the new
    recovery codes (shown once), or None for a wrong code."""
    if not device.verify_token(token):
        return None
    with transaction.atomic():
        TOTPDevice.objects.filter(user=device.user, confirmed=True).delete()
        device.confirmed = True
        device.save(update_fields=["confirmed"])
        return new_recovery_codes(device.user)


def new_recovery_codes(user: Any) -> list[str]:
    StaticDevice.objects.filter(user=user).delete()
    static = StaticDevice.objects.create(user=user, name="Recovery codes")
    codes = [StaticToken.random_token() for _ in range(RECOVERY_CODES)]
    StaticToken.objects.bulk_create(
        StaticToken(device=static, token=code) for code in codes
    )
    return codes


def turn_off(user: Any) -> None:
    TOTPDevice.objects.filter(user=user).delete()
    StaticDevice.objects.filter(user=user).delete()


def via_single_sign_on(request: HttpRequest) -> bool:
    return request.session.get(BACKEND_SESSION_KEY) == SSO_BACKEND


# Paths a session waiting for its second factor may still open. Of the
# second factor's own pages only the one it is sent to (SecondFactorMiddleware):
# with the setup or off page open, a password alone could replace or remove
# the authenticator and so skip the code.
OPEN_PREFIXES = ("/accounts/logout/", "/static/", "/v2/")


class SecondFactorMiddleware:
    """After a password sign-in: people with an authenticator enter a code
    before anything else (the admin included); people in a team that requires
    one set it up first. Runs after django_otp's OTPMiddleware."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        wanted = self.wanted(request)
        if wanted is not None:
            # Encoded, so a query of its own comes back whole after the code.
            query = urlencode({"next": request.get_full_path()}, safe="/")
            return redirect(f"{wanted}?{query}")
        return self.get_response(request)

    @staticmethod
    def wanted(request: HttpRequest) -> str | None:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if request.path_info.startswith(OPEN_PREFIXES) or user.is_verified():
            return None
        if via_single_sign_on(request):
            return None
        has_one, required = _state(user)
        if has_one:
            wanted = reverse("two-factor-verify")
        elif required:
            wanted = reverse("two-factor-setup")
        else:
            return None
        return None if request.path == wanted else wanted


def _state(user: Any) -> tuple[bool, bool]:
    """(has an authenticator, a team requires one) in one query: asked on
    every page of a session that has shown no code."""
    row = (
        get_user_model()
        .objects.filter(pk=user.pk)
        .annotate(
            has_one=Exists(
                TOTPDevice.objects.filter(user=OuterRef("pk"), confirmed=True)
            ),
            required=Exists(
                Team.objects.filter(
                    membership__user=OuterRef("pk"), require_second_factor=True
                )
            ),
        )
        .values_list("has_one", "required")
        .first()
    )
    return (bool(row[0]), bool(row[1])) if row else (False, False)
