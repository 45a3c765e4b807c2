"""Site-wide views: error pages (JSON in the API's envelope under /v2/, HTML
elsewhere) and the /favicon.ico that browsers ask for."""

from __future__ import annotations

import sys

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.template import loader
from django.templatetags.static import static
from django.views import defaults
from django.views.decorators.http import require_safe

from monitors.api.errors import (
    RETRY_UNAVAILABLE_AFTER,
    is_unavailable,
    json_bad_request,
    json_forbidden,
    json_not_found,
    json_server_error,
    json_service_unavailable,
)


def bad_request(
    request: HttpRequest, exception: Exception | None = None
) -> HttpResponse:
    if request.path.startswith("/v2/"):
        return json_bad_request(request, exception)
    return defaults.bad_request(request, exception)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/v2/"):
        return json_forbidden(request, exception)
    return defaults.permission_denied(request, exception)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/v2/"):
        return json_not_found(request, exception)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls this while handling the exception, so it is at hand: an
    # unreachable database (often in a middleware, loading the session) is a
    # 503 that says so, and the page works again once it is back.
    if is_unavailable(sys.exc_info()[1]):
        return service_unavailable(request)
    if request.path.startswith("/v2/"):
        return json_server_error(request)
    return defaults.server_error(request)


def service_unavailable(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/v2/"):
        return json_service_unavailable(request)
    # Rendered without the request: context processors would query the
    # database that is down.
    response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_UNAVAILABLE_AFTER)
    return response


@login_not_required
@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    # Browsers ask for /favicon.ico on pages that name no icon (the admin).
    # Resolved per request: the static files manifest may not exist at import.
    return HttpResponsePermanentRedirect(static("favicon.svg"))
