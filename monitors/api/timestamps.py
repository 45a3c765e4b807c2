"""How the API writes a moment: as Firecrawl's server does (JavaScript's
toISOString), in UTC with milliseconds and "Z", e.g. 2026-05-17T15:30:00.000Z.

One format for every field, whether or not the moment falls on a whole second
(Python's isoformat() drops the fraction then, and writes six digits
otherwise), so a client that parses Firecrawl's format reads all of them."""

from __future__ import annotations

from datetime import UTC, datetime

from rest_framework import serializers


def wire_time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


class TimestampField(serializers.DateTimeField):
    """A DateTimeField that answers in wire_time's format (documented as
    OpenAPI's date-time, like any DateTimeField)."""

    def to_representation(self, value: datetime | None) -> str | None:
        return None if value is None else wire_time(value)
