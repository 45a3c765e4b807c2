"""The second factor's pages: turn an authenticator app on (with recovery
codes), enter a code after signing in, turn it off. People's own pages: no
team role is needed (LoginRequiredMiddleware asks for a session)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import rotate_token
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST
from django_otp import login as otp_login
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from teams import second_factor
from teams.activity import Actor, Kind, record_in_their_teams

SETUP_SESSION_KEY = "pagewatch_totp_setup"
WRONG_CODE = (
    "That code did not work. Enter the six digits your app shows now (or one "
    "of your recovery codes); after several wrong codes, wait a little."
)


def _wait_words(until: datetime) -> str:
    seconds = max(1, math.ceil((until - timezone.now()).total_seconds()))
    return (
        f"Too many wrong codes: wait {seconds} second{pluralize(seconds)}, "
        "then try again."
    )


def _signed_in_with(request: HttpRequest, device: Any) -> None:
    """The session now holds the second factor too: under a new key (and CSRF
    token), as Django's login() does at the password. A key read while only
    the password was given (a shared machine's cookies, a glance at a log)
    must not become a whole sign-in once the code is typed."""
    otp_login(request, device)
    request.session.cycle_key()
    rotate_token(request)


def _next(request: HttpRequest) -> str:
    home = reverse("monitor-list")
    wanted = request.POST.get("next") or request.GET.get("next") or home
    # As the sign-in page asks: this site only, and over HTTPS no plain http.
    if url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return home


@require_http_methods(["GET"])
def overview(request: HttpRequest) -> HttpResponse:
    context = {
        "device": second_factor.authenticator(request.user),
        "required_by": second_factor.required_by(request.user),
        "recovery_left": sum(
            d.token_set.count() for d in StaticDevice.objects.filter(user=request.user)
        ),
    }
    return render(request, "teams/two_factor.html", context)


@require_http_methods(["GET", "POST"])
def setup(request: HttpRequest) -> HttpResponse:
    device = None
    if request.method == "POST":
        device = TOTPDevice.objects.filter(
            user=request.user,
            confirmed=False,
            pk=request.session.get(SETUP_SESSION_KEY),
        ).first()
    if device is None:
        device = second_factor.start_setup(request.user)
        request.session[SETUP_SESSION_KEY] = device.pk
    error = ""
    if request.method == "POST":
        codes = second_factor.confirm(device, request.POST.get("code", "").strip())
        if codes is not None:
            _signed_in_with(request, device)
            record_in_their_teams(Actor.of(request), Kind.SECOND_FACTOR_ON)
            request.session.pop(SETUP_SESSION_KEY, None)
            context = {"codes": codes, "next": _next(request)}
            response = render(request, "teams/two_factor_codes.html", context)
            response["Cache-Control"] = "no-store"  # the codes are shown once
            return response
        error = WRONG_CODE
    # Imported here: only this page draws a QR code, and every web process
    # would otherwise carry segno's modules.
    import segno

    qr = segno.make(device.config_url, error="m")
    required_by = second_factor.required_by(request.user)
    context = {
        "qr": qr.svg_data_uri(scale=4, dark="#1d2433"),
        "secret": _grouped(device.config_url),
        "error": error,
        "required_by": required_by,
        "next": _next(request),
        # A team requires it: until it is set up, every other page leads here.
        "signing_in": bool(required_by) and not request.user.is_verified(),
    }
    response = render(request, "teams/two_factor_setup.html", context,
                      status=400 if error else 200)  # fmt: skip
    response["Cache-Control"] = "no-store"
    return response


def _grouped(config_url: str) -> str:
    """The secret from the otpauth:// link, in groups of four to type in."""
    secret = config_url.split("secret=", 1)[1].split("&", 1)[0]
    return " ".join(secret[i : i + 4] for i in range(0, len(secret), 4))


def _meant_for(user: Any, token: str) -> list[TOTPDevice | StaticDevice | None]:
    """The device a code is for: the app's codes are its digits, recovery
    codes anything else. A code tried on both would count as wrong on the
    other, and one mistyped app code would then lock the recovery codes of
    someone whose phone is gone."""
    app = second_factor.authenticator(user)
    if app is not None and token.isdigit() and len(token) == app.digits:
        return [app]
    return [StaticDevice.objects.filter(user=user).first()]


@require_http_methods(["GET", "POST"])
def verify(request: HttpRequest) -> HttpResponse:
    if request.user.is_verified():
        return redirect(_next(request))
    error = ""
    if request.method == "POST":
        token = request.POST.get("code", "").replace(" ", "").strip()
        waits = []
        for device in _meant_for(request.user, token):
            if device is None or not token:
                continue
            # While throttled after a wrong code, verify_token refuses even the
            # right one: say to wait, not that a right code is wrong.
            allowed, refusal = device.verify_is_allowed()
            if not allowed and refusal and "locked_until" in refusal:
                waits.append(refusal["locked_until"])
            elif device.verify_token(token):
                _signed_in_with(request, device)
                if isinstance(device, StaticDevice):
                    record_in_their_teams(
                        Actor.of(request),
                        Kind.SIGNED_IN_WITH_RECOVERY_CODE,
                        left=device.token_set.count(),
                    )
                return redirect(_next(request))
        error = _wait_words(max(waits)) if waits else WRONG_CODE
    context = {"error": error, "next": _next(request), "signing_in": True}
    return render(request, "teams/two_factor_verify.html", context,
                  status=400 if error else 200)  # fmt: skip


@require_POST
def turn_off(request: HttpRequest) -> HttpResponse:
    teams = second_factor.required_by(request.user)
    if teams:
        names = ", ".join(team.name for team in teams)
        messages.error(request, f"{names} requires a second factor: it stays on.")
    else:
        second_factor.turn_off(request.user)
        record_in_their_teams(Actor.of(request), Kind.SECOND_FACTOR_OFF)
        messages.success(request, "The second factor is off.")
    return redirect("two-factor")
