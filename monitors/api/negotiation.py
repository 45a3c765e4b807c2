"""How the API picks the form of its answer: DRF's negotiation, except that a
`?format=` no renderer of the view makes is a 406 in the error envelope, as an
Accept header the API cannot satisfy is, rather than DRF's 404 "Not found"
for a path that exists."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation


class ContentNegotiation(DefaultContentNegotiation):
    def filter_renderers(self, renderers: list[Any], format: str) -> list[Any]:
        chosen = [renderer for renderer in renderers if renderer.format == format]
        if not chosen:
            raise NotAcceptable(
                f"Unknown format {format[:20]!r}: the API answers in JSON only."
            )
        return chosen
