"""How the API writes a moment: in wire_time's one format (Firecrawl's
toISOString, e.g. 2026-05-17T15:30:00.000Z) for every field."""

from __future__ import annotations

from datetime import datetime

from rest_framework import serializers

from monitors.time_words import wire_time


class TimestampField(serializers.DateTimeField):
    """A DateTimeField that answers in wire_time's format (documented as
    OpenAPI's date-time, like any DateTimeField)."""

    def to_representation(self, value: datetime | None) -> str | None:
        return None if value is None else wire_time(value)
