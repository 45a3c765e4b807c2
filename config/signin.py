"""Who is signing in from where, and the page for a locked-out sign-in: the
sign-in throttle's (django-axes, configured in config.settings) two hooks."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def client_ip(request: HttpRequest) -> str | None:
    """The address the failed sign-ins of a user name are counted under.

    Behind our own proxy (TRUST_PROXY_HEADERS) every connection comes from the
    proxy, so the client is the last X-Forwarded-For entry: the one the proxy
    added (nginx's `$proxy_add_x_forwarded_for`). Entries before it come from
    the client and prove nothing. Without a trusted proxy, the peer itself."""
    if settings.TRUST_PROXY_HEADERS:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-1]
    return request.META.get("REMOTE_ADDR")


def locked_out(
    request: HttpRequest, response: HttpResponse | None, credentials: Any
) -> HttpResponse:
    """429 with a page that says how long to wait; the same for the admin's
    sign-in, and for scripts (axes' own JSON answer allows every origin)."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {"minutes": minutes}
    return render(request, "registration/locked_out.html", context, status=429)
