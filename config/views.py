"""Error pages: JSON in the API's envelope under /v2/, HTML elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from monitors.api.errors import json_not_found, json_server_error


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/v2/"):
        return json_not_found(request, exception)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/v2/"):
        return json_server_error(request)
    return defaults.server_error(request)
