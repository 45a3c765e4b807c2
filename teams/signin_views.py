"""The sign-in page with single sign-on beside (or instead of) the password,
and the admin's sign-in when passwords are turned off."""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from config import signin
from teams import sso

logger = logging.getLogger(__name__)

PASSWORDS_OFF = (
    "Signing in with a password is turned off here: use the single sign-on "
    "button instead."
)


class SignInView(auth_views.LoginView):
    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        return context | {
            "sso_enabled": sso.enabled(),
            "sso_name": settings.OIDC_PROVIDER_NAME,
            "sso_failed": self.request.GET.get("sso") == "failed",
            "sso_unreachable": self.request.GET.get("sso") == "unreachable",
            "password_signin": settings.PASSWORD_SIGNIN,
        }

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.PASSWORD_SIGNIN:
            context = self.get_context_data() | {"refused": PASSWORDS_OFF}
            return render(request, self.template_name, context, status=403)
        return signin.address_refused(request) or super().post(request, *args, **kwargs)


sign_in = login_not_required(SignInView.as_view())
_sso_start = sso.SignInRequest.as_view()
_sso_callback = sso.SignInCallback.as_view()


# The provider could not be reached, or answered something unusable.
PROVIDER_TROUBLE = (requests.RequestException, ImproperlyConfigured, ValueError)


@login_not_required
def sso_start(request: HttpRequest) -> HttpResponse:
    if not sso.enabled():
        raise Http404("Single sign-on is not set up")
    try:
        return _sso_start(request)
    except PROVIDER_TROUBLE as exc:
        logger.warning("Single sign-on provider unusable: %s", exc)
        return redirect(reverse("login") + "?sso=unreachable")


@login_not_required
def sso_callback(request: HttpRequest) -> HttpResponse:
    if not sso.enabled():
        raise Http404("Single sign-on is not set up")
    try:
        return _sso_callback(request)
    except PROVIDER_TROUBLE as exc:
        logger.warning("Single sign-on failed at the provider: %s", exc)
        return redirect(reverse("login") + "?sso=failed")


@login_not_required
def admin_sign_in(request: HttpRequest) -> HttpResponse:
    """The admin's own sign-in form, unless passwords are turned off: then
    administrators sign in through the dashboard's page (single sign-on)."""
    if settings.PASSWORD_SIGNIN:
        refused = request.method == "POST" and signin.address_refused(request)
        return refused or admin.site.login(request)
    wanted = request.GET.get("next") or reverse("admin:index")
    return redirect(reverse("login") + "?" + urlencode({"next": wanted}))
