"""/v2/openapi.json and /v2/docs: drf-spectacular's views, as /v2 views, so
that what they refuse is refused as the rest of the API refuses it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from checks.targets.options import PythonNamesMixin
from monitors.api.base import ApiView


class OpenApiDocumentView(ApiView, SpectacularJSONAPIView):
    pass


class DocsView(ApiView, SpectacularSwaggerSplitView):
    """Swagger UI with its start-up script served as a file (the "split"
    view) and our own page around it: nothing inline, nothing from a CDN, so
    the page works under the site's Content-Security-Policy and offline."""


class StrictBodySchema(OpenApiSerializerExtension):
    """A body that refuses keys it does not define (StrictMixin) says so with
    `additionalProperties: false`, so generated clients and schemathesis know
    a misspelt key is a 400. The keys it takes and ignores (allow_extra: the
    SDKs' `origin`, search keys Firecrawl dropped) are listed, so the document
    still allows everything the server takes."""

    target_class = "checks.targets.options.StrictMixin"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = auto_schema._map_serializer(
            self.target, direction, bypass_extensions=True
        )
        # An option also taken under its Python name has two spellings per
        # key; listing both would double the document for little gain.
        if direction != "request" or isinstance(self.target, PythonNamesMixin):
            return schema
        properties = schema.setdefault("properties", {})
        for name in self.target.allow_extra:
            properties.setdefault(
                name, {"deprecated": True, "description": "Taken and ignored."}
            )
        schema["additionalProperties"] = False
        return schema
