"""Site-wide request plumbing."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


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


class ApiNoStoreMiddleware:
    """Every answer under /v2/ says `Cache-Control: no-store`. They carry a
    team's monitors and results to whoever holds the key, and nothing in
    them varies on Authorization: a shared cache keyed on the URL would hand
    one caller's answer to the next, and a browser would keep it on disk.
    An answer that sets its own Cache-Control keeps it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path_info.startswith("/v2/") and "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response
