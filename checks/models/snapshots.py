"""Stored content: page snapshots and the browser's captures, each kept once
per distinct content."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import models

from checks.content import (
    SOURCE_HTML,
    SOURCE_MARKDOWN,
    Pack,
    markdown_of,
    pack_snapshot,
    unpack,
)


class Snapshot(models.Model):
    """Extracted page content, stored once per distinct content (by hash) and
    compressed, so an unchanged page costs no new storage.

    `format` says what `data` holds: Markdown, or an HTML page's source
    (cleaned HTML, see checks.extract.markdown_of) whose Markdown `text`
    derives on read."""

    class Format(models.TextChoices):
        MARKDOWN = SOURCE_MARKDOWN, "Markdown"
        HTML = SOURCE_HTML, "Cleaned HTML"

    content_hash = models.CharField(max_length=64)
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    format = models.CharField(
        max_length=16, choices=Format.choices, default=Format.MARKDOWN
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # A constraint rather than unique=True, which on PostgreSQL adds a
            # second, LIKE-pattern index that no query uses and every insert
            # pays for.
            models.UniqueConstraint(
                fields=["content_hash"], name="one_snapshot_per_content"
            )
        ]

    def __str__(self) -> str:
        return f"snapshot {self.content_hash[:12]} ({self.size} bytes)"

    @classmethod
    def store(cls, text: str, source_format: str = SOURCE_MARKDOWN) -> Snapshot:
        """The snapshot of `text`, inserted unless it exists."""
        pack = pack_snapshot(text, source_format)
        return cls.objects.get(pk=cls.store_many([pack])[pack[0]])

    @classmethod
    def store_many(cls, packs: Iterable[Pack]) -> dict[str, int]:
        """Ids by content hash of (content hash, compressed data, size,
        format) packs (checks.content.pack_snapshot), inserted where missing.

        ON CONFLICT DO UPDATE of an unchanged column rather than DO NOTHING:
        the database then returns the id of an existing row as well (where it
        cannot, one SELECT finds them)."""
        rows = {pack[0]: pack for pack in packs}
        if not rows:
            return {}
        snapshots = cls.objects.bulk_create(
            [
                cls(content_hash=digest, data=data, size=size, format=source_format)
                for digest, data, size, source_format in rows.values()
            ],
            update_conflicts=True,
            unique_fields=["content_hash"],
            update_fields=["size"],
        )
        ids = {s.content_hash: s.pk for s in snapshots if s.pk is not None}
        if len(ids) < len(rows):
            ids |= cls.ids(set(rows) - set(ids))
        return ids

    @classmethod
    def ids(cls, hashes: Iterable[str]) -> dict[str, int]:
        """Ids by content hash of existing snapshots."""
        return dict(
            cls.objects.filter(content_hash__in=set(hashes)).values_list(
                "content_hash", "id"
            )
        )

    @classmethod
    def packed(cls, ids: Iterable[int]) -> dict[int, tuple[bytes, str]]:
        """(compressed data, format) by id: baselines a check compares with."""
        return {
            pk: (bytes(data), source_format)
            for pk, data, source_format in cls.objects.filter(
                pk__in=set(ids)
            ).values_list("id", "data", "format")
        }

    @property
    def source(self) -> str:
        """The stored text as it is (see `format`)."""
        return unpack(bytes(self.data))

    @property
    def text(self) -> str:
        """The page's Markdown. Raises checks.extract.ExtractionError when an
        HTML source cannot be converted."""
        return markdown_of(self.format, self.source)


class Capture(models.Model):
    """A screenshot or a PDF the browser took, stored once per content (by
    SHA-256) in its own compressed format (PNG, JPEG, PDF), served through
    signed, expiring links (checks.captures)."""

    content_hash = models.CharField(max_length=64)
    media_type = models.CharField(max_length=32)
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["content_hash"], name="one_capture_per_content"
            )
        ]

    def __str__(self) -> str:
        return f"{self.media_type} {self.content_hash[:12]} ({self.size} bytes)"

    @classmethod
    def store_many(cls, shots: Iterable[Any]) -> dict[str, int]:
        """Ids by content hash of these Shots (checks.browser.result), inserted
        where missing (see Snapshot.store_many)."""
        rows = {shot.digest: shot for shot in shots}
        if not rows:
            return {}
        captures = cls.objects.bulk_create(
            [
                cls(
                    content_hash=digest,
                    media_type=shot.media_type,
                    data=shot.data,
                    size=len(shot.data),
                )
                for digest, shot in rows.items()
            ],
            update_conflicts=True,
            unique_fields=["content_hash"],
            update_fields=["size"],
        )
        ids = {c.content_hash: c.pk for c in captures if c.pk is not None}
        missing = set(rows) - set(ids)
        if missing:
            ids |= dict(
                cls.objects.filter(content_hash__in=missing).values_list(
                    "content_hash", "id"
                )
            )
        return ids
