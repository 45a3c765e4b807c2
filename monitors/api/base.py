"""The class every /v2 view derives from, the API's documents included."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitors.api import conditional


class ApiView(APIView):
    # DRF's APIView with the caller judged before the form of the answer, and
    # every error in JSON. DRF negotiates first, so a caller without a key who
    # asks for XML would hear 406 (and learn what the path answers in) where
    # SDKs expect the 401 that every other request without a key gets. A
    # comment, not a docstring: drf-spectacular publishes a view's docstring,
    # inherited ones included, as each operation's description.

    # Whether a 200 to GET carries an ETag and If-None-Match may answer 304
    # (monitors.api.conditional): the monitor and check reads.
    conditional_reads = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.format_kwarg = self.get_format_suffix(**kwargs)
        self.perform_authentication(request)
        self.check_permissions(request)
        self.check_throttles(request)
        negotiated = self.perform_content_negotiation(request)
        request.accepted_renderer, request.accepted_media_type = negotiated
        version, scheme = self.determine_version(request, *args, **kwargs)
        request.version, request.versioning_scheme = version, scheme

    def handle_exception(self, exc: Exception) -> Response:
        # An error is the API's envelope in JSON even from a view whose answers
        # take another form (the OpenAPI document's media type, the docs page's
        # HTML), or that could not agree on a form at all.
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> HttpResponse:
        response = super().finalize_response(request, response, *args, **kwargs)
        if (
            self.conditional_reads
            and request.method in ("GET", "HEAD")
            and response.status_code == 200
        ):
            return conditional.answer(request, response)
        return response
