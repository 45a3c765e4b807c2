"""Site-wide views: error pages (JSON in the API's envelope under /v2/, HTML
elsewhere), the /favicon.ico that browsers ask for, and what an operator's
monitoring asks: /healthz (open, no secrets) and /metrics (Prometheus, behind
METRICS_TOKEN)."""

from __future__ import annotations

import hmac
import logging
import sys

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.template import loader
from django.templatetags.static import static
from django.utils import timezone
from django.views import csrf, defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from checks import outages
from checks.health import service_health, service_warnings
from monitors.api.errors import (
    RETRY_UNAVAILABLE_AFTER,
    is_unavailable,
    json_bad_request,
    json_forbidden,
    json_not_found,
    json_server_error,
    json_service_unavailable,
)

logger = logging.getLogger(__name__)


def bad_request(
    request: HttpRequest, exception: Exception | None = None
) -> HttpResponse:
    if request.path_info.startswith("/v2/"):
        return json_bad_request(request, exception)
    return defaults.bad_request(request, exception)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path_info.startswith("/v2/"):
        return json_forbidden(request, exception)
    return defaults.permission_denied(request, exception)


# Marks a refused form's token (CSRF_FAILURE_VIEW), so the dashboard's script
# can say "this page is out of date, reload it" rather than blaming the
# caller's role, as it would for any other 403.
STALE_FORM_HEADER = "Pagewatch-Refused"


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    response = csrf.csrf_failure(request, reason)
    response[STALE_FORM_HEADER] = "stale-form"
    return response


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path_info.startswith("/v2/"):
        return json_not_found(request, exception)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls this while handling the exception, so it is at hand: an
    # unreachable database (often in a middleware, loading the session) is a
    # 503 that says so, and the page works again once it is back.
    if is_unavailable(sys.exc_info()[1]):
        return service_unavailable(request)
    if request.path_info.startswith("/v2/"):
        return json_server_error(request)
    return defaults.server_error(request)


def service_unavailable(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith("/v2/"):
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


@login_not_required
@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when every part is fine, else 503; each part says ok or what is
    wrong, in words without addresses or secrets."""
    now = timezone.now()
    parts = service_health(now)
    healthy = all(part.ok for part in parts)
    body: dict[str, object] = {
        "status": "ok" if healthy else "down",
        "parts": {part.name: part.problem or "ok" for part in parts},
    }
    if warnings := service_warnings(now):
        body["warnings"] = warnings  # not a 503 of their own: nothing is down
    return JsonResponse(body, status=200 if healthy else 503)


@login_not_required
@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus's text format, for `Authorization: Bearer METRICS_TOKEN`;
    without METRICS_TOKEN set the page does not exist."""
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme != "Bearer" or not hmac.compare_digest(given.encode(), token.encode()):
        response = HttpResponse("A valid METRICS_TOKEN is needed.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    # Imported here: only the processes that serve a scrape pay for them.
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
    from prometheus_client.registry import CollectorRegistry

    from checks.metrics import DatabaseCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(timezone.now()))
    try:
        body = generate_latest(registry)
    except outages.DATABASE_ERRORS as exc:
        if not outages.database_away(exc):
            raise  # a fault on a live database: Django logs its traceback
        # Every series comes from the database, so there is nothing to give;
        # Prometheus marks the scrape failed. One line per scrape, not the
        # traceback Django logs with its own 503 (one every 15 s or so).
        logger.warning("Metrics: the database is unreachable: %s", outages.reason(exc))
        response = HttpResponse(
            "The database is unreachable.\n", status=503, content_type="text/plain"
        )
        response["Retry-After"] = str(RETRY_UNAVAILABLE_AFTER)
        return response
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
