"""Conditional reads for clients that keep a copy (a Pagewatch extension;
the official SDKs never send If-None-Match, so they always get the whole
answer). An answer's ETag is a hash of its bytes: what a monitor or a check
shows changes without an edit too (its last run, next run and current check,
its last summary, its e-mail subscriptions, the signed links to screenshots,
made anew each quarter of their lifetime), so no stored "updated" time could
stand for it. Hashing the
rendered body costs no query and a fraction of the rendering itself.

Answers keep `Cache-Control: no-store` (config.middleware.NoStoreMiddleware):
nothing is kept by browsers or proxies; a script that kept its own copy
sends the ETag back itself."""

from __future__ import annotations

import hashlib

from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.http import parse_etags, quote_etag
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

# What a 304 repeats of the 200 it stands for (RFC 9110, 15.4.5).
_KEPT_HEADERS = ("ETag", "Vary")


def answer(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """`response` (a 200 to a read) with its ETag, or a 304 without a body
    when If-None-Match names that ETag (or is `*`)."""
    response.render()  # type: ignore[attr-defined]
    # SHA-256 rather than Django's MD5 (set_response_etag): faster where the
    # processor has SHA instructions, as servers' do.
    etag = quote_etag(hashlib.sha256(response.content).hexdigest()[:32])
    response["ETag"] = etag
    if not _matches(request.headers.get("If-None-Match", ""), etag):
        return response
    not_modified = HttpResponseNotModified()
    for name in _KEPT_HEADERS:
        if name in response:
            not_modified[name] = response[name]
    return not_modified


def _matches(header: str, etag: str) -> bool:
    """If-None-Match's weak comparison: a W/ on either side is ignored."""
    if not header.strip():
        return False
    tags = parse_etags(header)
    return "*" in tags or any(tag.removeprefix("W/") == etag for tag in tags)


IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description=(
        "Pagewatch extension: the ETag of the answer you kept. When the "
        "answer is still the same, it is a 304 without a body."
    ),
)
ETAG = OpenApiParameter(
    "ETag",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200, 304],
    description=(
        "Pagewatch extension: a strong validator of this answer's exact "
        "bytes; send it back as If-None-Match."
    ),
)
NOT_MODIFIED = {
    304: OpenApiResponse(
        description="Not modified: the answer is still the one with the ETag "
        "sent in If-None-Match (no body)."
    )
}
