"""/v2/openapi.json and /v2/docs: drf-spectacular's views, as /v2 views, so
that what they refuse is refused as the rest of the API refuses it."""

from __future__ import annotations

from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from monitors.api.base import ApiView


class OpenApiDocumentView(ApiView, SpectacularJSONAPIView):
    pass


class DocsView(ApiView, SpectacularSwaggerSplitView):
    """Swagger UI with its start-up script served as a file (the "split"
    view) and our own page around it: nothing inline, nothing from a CDN, so
    the page works under the site's Content-Security-Policy and offline."""
