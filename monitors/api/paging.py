"""Newest-first lists a page at a time (GET /v2/monitor and a monitor's
checks): by `offset`, as Firecrawl's clients ask, or after a cursor
(`before`, a Pagewatch extension), which every answer with more rows gives in
its `next` link.

An offset counts rows, so a row created while a client pages (a monitor made,
a check queued) pushes the next page's first row back onto it, and a row
deleted pulls one past it unseen. A cursor names the last row seen (its
creation time and id, the lists' total order), so the next page starts after
that row whatever was created or deleted meanwhile.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from monitors.links import public_url

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# Far longer than any cursor made here (16 digits, "_", 32 hex digits).
_CURSOR_MAX = 80
_BAD_CURSOR = "Must be the cursor from a previous page's next link."

BEFORE = OpenApiParameter(
    "before",
    str,
    description=(
        "Pagewatch extension: only items after this one in the list's order "
        "(older, or created in the same instant with a smaller id). The value "
        "comes from the `before` of the previous page's `next` link; items "
        "created or deleted in the meantime do not shift the pages, as they "
        "do with `offset`."
    ),
)


def since_parameter(what: str) -> OpenApiParameter:
    return OpenApiParameter(
        UPDATED_SINCE,
        {"type": "string", "format": "date-time"},
        description=(
            f"Pagewatch extension: only {what} changed after this moment "
            "(strictly), an ISO 8601 date and time with its time zone. Keeps to "
            "the list's order, paging and other filters; the `next` link "
            "carries it."
        ),
    )


NEXT = serializers.URLField(
    required=False,
    help_text=(
        "Pagewatch extension: the absolute address of the next page (at "
        "PUBLIC_BASE_URL when set, else at the request's host), with the same "
        "`limit` and filters and a `before` cursor; absent on the last page."
    ),
)


UPDATED_SINCE = "updatedSince"
_BAD_SINCE = (
    "Must be an ISO 8601 date and time with its time zone, such as "
    "2026-05-17T15:30:00Z or 2026-05-17T17:30:00.000+02:00."
)
# Far longer than any such moment (35 characters with microseconds and an
# offset).
_SINCE_MAX = 64
# A "+" sent unencoded in a query string arrives as a space.
_UNENCODED_PLUS = re.compile(r" ([0-9]{2}(?::?[0-9]{2})?)$")


def since_param(request: Request) -> datetime | None:
    """The `updatedSince` query parameter in UTC: None when absent or empty,
    a 400 naming it when it is not a moment with its time zone (a moment
    without one would be read in some zone the client did not mean)."""
    raw = request.query_params.get(UPDATED_SINCE, "").strip()
    if not raw:
        return None
    raw = _UNENCODED_PLUS.sub(r"+\1", raw)
    try:
        moment = parse_datetime(raw) if len(raw) <= _SINCE_MAX else None
        if moment is None or moment.utcoffset() is None:
            raise ValueError(raw)
        return moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValidationError({UPDATED_SINCE: [_BAD_SINCE]}) from None


class Cursor(NamedTuple):
    created_at: datetime
    pk: uuid.UUID

    @classmethod
    def of(cls, row: Any) -> Cursor:
        return cls(row.created_at, row.pk)

    def __str__(self) -> str:
        micros = (self.created_at - _EPOCH) // _MICROSECOND
        return f"{micros}_{self.pk.hex}"


def before_param(request: Request) -> Cursor | None:
    """The `before` query parameter: None when absent or empty, a 400 naming
    it when it is not a cursor this module made."""
    raw = request.query_params.get("before", "").strip()
    if not raw:
        return None
    micros, _, pk = raw.partition("_")
    if len(raw) > _CURSOR_MAX or not micros.isascii() or not micros.isdigit():
        raise ValidationError({"before": [_BAD_CURSOR]})
    try:
        return Cursor(_EPOCH + int(micros) * _MICROSECOND, uuid.UUID(hex=pk))
    except (ValueError, OverflowError):
        raise ValidationError({"before": [_BAD_CURSOR]}) from None


def newest_first(rows: QuerySet[Any], before: Cursor | None) -> QuerySet[Any]:
    """`rows` in the lists' total order, newest first (ties on the creation
    time broken by id), after `before` when given."""
    rows = rows.order_by("-created_at", "-pk")
    if before is None:
        return rows
    return rows.filter(
        Q(created_at__lt=before.created_at)
        | Q(created_at=before.created_at, pk__lt=before.pk)
    )


def next_link(request: Request, last: Any, limit: int, **filters: str | None) -> str:
    """The next page's absolute address (see `absolute`), after `last`, with
    the same limit, `filters` and `updatedSince`."""
    query: dict[str, Any] = {"limit": limit, "before": str(Cursor.of(last))}
    filters[UPDATED_SINCE] = request.query_params.get(UPDATED_SINCE, "").strip()
    query |= {name: value for name, value in filters.items() if value}
    return absolute(request, query)


def absolute(request: Request, query: dict[str, Any]) -> str:
    """This request's path with `query`, at PUBLIC_BASE_URL when the operator
    set it (behind a proxy a request's own host is the proxy's view of it).
    Unset, its default names this machine, which a client elsewhere would
    take for its own (the JS SDK follows `next` as given, key and all), so the
    request's host is used, which ALLOWED_HOSTS has vetted."""
    address = f"{request.path}?{urlencode(query)}"
    if settings.PUBLIC_BASE_URL_SET:
        # request.path carries PUBLIC_BASE_URL's sub-path already.
        return public_url(address)
    return request.build_absolute_uri(address)
