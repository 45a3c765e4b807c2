"""Site-wide request plumbing."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import logout
from django.core.exceptions import BadRequest, ValidationError
from django.http import HttpRequest, HttpResponse

from config.logs import hidden


class ProbeMiddleware:
    """`/healthz` and `/metrics` answer whatever host a request names. Probes
    and scrapers address a machine, not the public name in ALLOWED_HOSTS: a
    load balancer's or Kubernetes' probe sends the pod's address, a local
    `curl http://127.0.0.1:8000/healthz` sends 127.0.0.1, and Prometheus
    scraping each web host names that host; CommonMiddleware answered them
    all 400. Neither view builds a link from the host, so there is nothing
    for a forged one to poison. First in MIDDLEWARE, before anything that
    reads the host."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        from config import views  # once the apps are loaded

        self.get_response = get_response
        self.probes = {"/healthz": views.healthz, "/metrics": views.metrics}

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = self.probes.get(request.path_info)
        if probe is None:
            return self.get_response(request)
        response = probe(request)
        response["X-Content-Type-Options"] = "nosniff"
        return response


class ApiTrailingSlashMiddleware:
    """`/v2/monitor/` is `/v2/monitor`: Firecrawl's server ignores one trailing
    slash, and hand-written clients add one. The path is rewritten before URL
    resolution rather than redirected, because clients follow a redirect with
    a GET and drop a POST's body; and no URL pattern ends in a slash under
    /v2/, so Django's APPEND_SLASH never redirects there either."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        # One slash, as Express ignores; not any number of them.
        one_slash = path.endswith("/") and not path.endswith("//")
        if path.startswith("/v2/") and len(path) > 4 and one_slash:
            request.path_info = path[:-1]
        return self.get_response(request)


class NoStoreMiddleware:
    """Every answer Django makes says `Cache-Control: no-store`, unless it set
    its own. The API's carry a team's monitors and results to whoever holds
    the key, and nothing in them varies on Authorization: a shared cache keyed
    on the URL would hand one caller's answer to the next. The dashboard's
    carry secrets on ordinary pages (a monitor's and the team's feed links,
    an invitation link in a message, the export), and the pages at a token
    address (invitations, unsubscribing, feeds) are that token's: none may be
    shown again from the browser's history or disk after signing out, nor by
    a proxy to someone else. Static files never reach here (WhiteNoise, just
    before, answers them with its own long caching)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response


class CredentialAddressMiddleware:
    """A page whose address holds a credential (config.logs: a feed, e-mail,
    invitation, password-reset or screenshot link, a `?next=` leading to one,
    the sign-in provider's `code`) sends `Referrer-Policy: strict-origin`:
    the requests it makes, for its stylesheet, script and icon and for the
    next page, name only this site's origin. With the site's `same-origin`
    they named the whole address, token included, for every proxy, CDN or
    log between. Not `no-referrer`: browsers then send `Origin: null` with a
    form's POST, which Django's CSRF check refuses, and these pages' buttons
    (unsubscribe, confirm, join) would stop working."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        address = request.get_full_path()
        if hidden(address) != address:
            response["Referrer-Policy"] = "strict-origin"
        return response


class NulInQueryMiddleware:
    """A NUL character (`%00`) in a request's query string is a 400.
    PostgreSQL refuses NUL in text, and much passes a query string's values
    straight to a query with no form in between: the admin's list filters
    (`?status=%00` was a 500; Django's own code) and the dashboard's monitor
    search. No link Pagewatch makes holds one, so refusing it here, once,
    covers every filter, search and API parameter, now and later. Raised
    rather than answered, so the 400 is the site's own page (handler400: the
    API's envelope under /v2/); placed after the middleware that add headers
    to every answer, so this one has them too. A NUL in the path reaches no
    query of text (ids are parsed first; link tokens are checked for shape,
    hashed or signature-checked before any lookup) and stays the 404 it was."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if any(
            "\x00" in key or any("\x00" in value for value in values)
            for key, values in request.GET.lists()
        ):
            raise BadRequest("NUL character in the query string")
        return self.get_response(request)


class AdminSelectedIdsMiddleware:
    """An admin action names its rows in `_selected_action`, which Django
    hands to `filter(pk__in=...)` unchecked: a forged POST with "abc" for a
    number, junk for a UUID or a number past the column's range was a 500,
    on our own lists and on Django's (groups) alike. Each id is read here the
    way the model's primary key reads it, before any admin view runs, and a
    POST with one that is not an id of that model is a 400 that changes
    nothing. The admin marks each model's views with their ModelAdmin
    (`view.model_admin`), which tells the model without resolving URLs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., HttpResponse],
        view_args: Any,
        view_kwargs: Any,
    ) -> None:
        model_admin = getattr(view_func, "model_admin", None)
        if model_admin is None or request.method != "POST":
            return None
        pk = model_admin.model._meta.pk
        while pk.remote_field is not None:  # a one-to-one key: read as its target
            pk = pk.target_field
        for value in request.POST.getlist(ACTION_CHECKBOX_NAME):
            try:
                if "\x00" in value:
                    raise ValidationError("NUL character")
                pk.run_validators(pk.to_python(value))
            except ValidationError:
                raise BadRequest("A selected row's id is not valid") from None
        return None


class SessionLimitsMiddleware:
    """A dashboard sign-in ends after SESSION_IDLE_SECONDS without a request
    and SESSION_ABSOLUTE_SECONDS after it began, whatever happens between.

    The idle limit is the cookie's and the stored session's own expiry; it is
    renewed at most once a minute (`seen`), not on every request, so a page
    that polls does not write its session each time. The absolute limit needs
    the moment of sign-in, which `stamp_sign_in` keeps in the session."""

    RENEW_AFTER_SECONDS = 60

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self._signed_in(request):
            self._apply(request)
        return self.get_response(request)

    @staticmethod
    def _signed_in(request: HttpRequest) -> bool:
        user = getattr(request, "user", None)
        return hasattr(request, "session") and bool(user and user.is_authenticated)

    def _apply(self, request: HttpRequest) -> None:
        session, now = request.session, int(time.time())
        began = session.setdefault("signed_in_at", now)
        if now - int(began) >= settings.SESSION_ABSOLUTE_SECONDS:
            logout(request)  # flushes the session: the next page asks to sign in
            return
        if now - int(session.get("seen", 0)) >= self.RENEW_AFTER_SECONDS:
            session["seen"] = now
            session.set_expiry(settings.SESSION_IDLE_SECONDS)


def stamp_sign_in(sender: object, request: HttpRequest | None, **_: object) -> None:
    """On user_logged_in: when the session began and was last renewed, so the
    first pages after signing in write nothing."""
    if request is not None and hasattr(request, "session"):
        now = int(time.time())
        request.session["signed_in_at"] = request.session["seen"] = now
