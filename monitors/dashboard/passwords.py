"""The password-reset request, throttled: per client address like a sign-in
(django-axes' AXES_FAILURE_LIMIT within AXES_COOLOFF_TIME) and per account by
the e-mails sent (PASSWORD_RESET_EMAILS_PER_HOUR), so the form can be used
neither to guess which addresses have accounts nor to flood a mailbox.

The answer is the same "check your inbox" page whether or not an account has
the address, and whether or not its e-mail was held back.

A new password, changed or chosen with a reset link, is in the activity log
of each of the person's teams, as their second factor is: a stolen account
often shows there first."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render

from config.signin import address_key, client_ip, count_in_window, throttled_address
from teams import emails as team_emails
from teams.activity import Actor, Kind, Via, record_in_their_teams

HOUR = 3600


def _within(key: str, limit: int, window_seconds: int) -> bool:
    """Count one more use of `key` in its window; False once past `limit`.
    While the cache is unreachable every request is let through."""
    used = count_in_window(key, window_seconds)
    return used is None or used <= limit


def _account_key(email: str) -> str:
    digest = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
    return f"password-reset:account:{digest}"


class PasswordResetView(auth_views.PasswordResetView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        window = int(settings.AXES_COOLOFF_TIME.total_seconds())
        address = throttled_address(request)
        # A proxy's address (address_key gives None) would be everyone's:
        # counted, anyone could hold back every reset. Each account's own cap
        # below still keeps its mailbox from being flooded.
        counted = address_key(address) and f"password-reset:address:{address}"
        if counted and not _within(counted, settings.AXES_FAILURE_LIMIT, window):
            context = {"minutes": window // 60}
            template = "registration/password_reset_throttled.html"
            return render(request, template, context, status=429)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        email = form.cleaned_data["email"]
        # Past the cap: the same answer as a sent e-mail, so the form does
        # not tell an attacker that this address has an account and was
        # capped. Under it, a worker looks the address up and sends the mail
        # (teams.emails.queue_password_reset): done here, the mail server's
        # time told who has an account.
        if _within(_account_key(email), settings.PASSWORD_RESET_EMAILS_PER_HOUR, HOUR):
            team_emails.queue_password_reset(email)
        return HttpResponseRedirect(self.get_success_url())


class PasswordChangeView(auth_views.PasswordChangeView):
    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        record_in_their_teams(Actor.of(self.request), Kind.PASSWORD_CHANGED)
        return response


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        # Signed out: the person is the reset link's, not the request's.
        actor = Actor(Via.DASHBOARD, user=form.user, address=client_ip(self.request))
        record_in_their_teams(actor, Kind.PASSWORD_CHANGED, reset=True)
        return response
