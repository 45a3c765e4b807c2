"""Pages: the baseline of each watched URL (PageState) and each page's
outcome in a check (PageResult)."""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import Case, F, Max, OuterRef, Subquery, Value, When, Window
from django.db.models.fields.json import KT
from django.db.models.functions import SHA256, RowNumber
from django.urls import reverse

from checks import shared_clock
from checks.bulk_delete import delete_rows
from checks.content import (
    diff_ast,
    diff_reference,
    pack_diff,
    packed_against,
    unpack,
    unpack_diff,
)
from checks.errors import ErrorKind
from checks.models.snapshots import Capture, Snapshot
from monitors.models import Monitor

# The order a check's pages are listed in: what changed first.
CHANGES_FIRST = ("changed", "new", "removed", "error", "same")


class UrlHash(SHA256):
    """PageState.hash_url in SQL. On PostgreSQL from its own sha256(), as
    Django's SHA256 there needs the pgcrypto extension."""

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "ENCODE(SHA256(CONVERT_TO(%(expressions)s, 'UTF8')), 'hex')"
        return self.as_sql(compiler, connection, template=template, **extra)


class PageState(models.Model):
    """The baseline of one URL of one target: the last good content that the
    next check compares against. Never deleted by retention."""

    class Presence(models.TextChoices):
        ACTIVE = "active"
        REMOVED = "removed"

    # No index of its own: one_state_per_page starts with the monitor.
    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="page_states", db_index=False
    )
    target_id = models.UUIDField()
    url = models.URLField(max_length=2048)
    # Hash of the URL: a unique index over 2048-char URLs is not portable.
    url_hash = models.CharField(max_length=64)
    snapshot = models.ForeignKey(
        Snapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    normalized_hash = models.CharField(max_length=64, blank=True)
    scrape_id = models.UUIDField(null=True, blank=True)
    presence = models.CharField(
        max_length=16, choices=Presence.choices, default=Presence.ACTIVE
    )
    fetched_at = models.DateTimeField(null=True, blank=True)
    # When this content may be served again for scrapeOptions.maxAge/minAge;
    # null when it was fetched with storeInCache: false (checks.runner).
    cached_at = models.DateTimeField(null=True, blank=True)
    # Page metadata of that fetch (title, statusCode...), replayed on a cache hit.
    metadata = models.JSONField(default=dict, blank=True)
    # What lets the next check skip work (checks.pipeline.extract): the hash of the body
    # as fetched and of the scrapeOptions it was extracted with (the same
    # bytes under the same options are never extracted again), and the
    # server's validators for a conditional request (304: no body at all).
    body_hash = models.CharField(max_length=64, blank=True)
    options_hash = models.CharField(max_length=64, blank=True)
    etag = models.CharField(max_length=512, blank=True)
    last_modified = models.CharField(max_length=64, blank=True)
    # What the model made of this content (checks.ai.stage), reused while the
    # page's text stays the same: {"json": {"key", "value"}, "summary": {...}},
    # each keyed by what was asked (schema and prompt).
    derived = models.JSONField(default=dict, blank=True)
    # "browser" once a plain fetch of this page was found built by scripts
    # (checks.browser.detect): later checks go straight to the browser.
    fetcher = models.CharField(max_length=8, blank=True)
    # The fingerprint of the text of the site's "not found" page this page was
    # confirmed to show (checks.content.not_found.fingerprint), while it is
    # removed: the same text again (but for the digits of a time or a request
    # id) is still gone without asking the site a made-up address.
    not_found_hash = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["monitor", "target_id", "url_hash"], name="one_state_per_page"
            )
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.presence})"

    @staticmethod
    def hash_url(url: str) -> str:
        return hashlib.sha256(url.encode()).hexdigest()

    UPSERT_FIELDS = (
        "url", "snapshot", "normalized_hash", "scrape_id", "presence",
        "fetched_at", "cached_at", "metadata", "body_hash", "options_hash",
        "etag", "last_modified", "derived", "fetcher", "not_found_hash",
        "updated_at",
    )  # fmt: skip

    @classmethod
    def upsert(cls, states: list[PageState]) -> None:
        """Insert these baselines, or update the existing row of each page
        (monitor, target_id, url_hash): one INSERT ... ON CONFLICT DO UPDATE."""
        cls.objects.bulk_create(
            states,
            update_conflicts=True,
            unique_fields=["monitor", "target_id", "url_hash"],
            update_fields=cls.UPSERT_FIELDS,
        )

    @property
    def has_baseline(self) -> bool:
        """Content the next good fetch is compared with."""
        return self.presence == self.Presence.ACTIVE and self.snapshot_id is not None

    @property
    def is_removed(self) -> bool:
        """Reported removed by an earlier check and not seen since."""
        return self.presence == self.Presence.REMOVED

    @property
    def is_cacheable(self) -> bool:
        """May answer scrapeOptions.maxAge/minAge."""
        return self.has_baseline and self.cached_at is not None


class PageResultQuerySet(models.QuerySet["PageResult"]):
    def discard(self) -> int:
        """Delete these page results in two statements, their links to
        captures first. delete() would read every row's id into Python and
        delete them a hundred at a time, the links keeping the model off
        Django's fast path: minutes for a monitor with a long history. Filter
        them on what deleting does not change (their check, its monitor)."""
        links = PageResult.captures.through.objects.filter(
            pageresult__in=self.values("pk")
        )
        links.delete()  # nothing refers to a link: Django's fast path
        return delete_rows(self)

    def hand_over_screenshots(self) -> None:
        """Before these results go: the next result of each of their pages
        with a screenshot keeps the one before its own, since that is what
        it is compared with (PageResult.previous_screenshot), and links its
        capture, which keeps it from retention's purge of unreferenced ones.

        The next result is looked for in the next check of the monitor only:
        that check is found by check_monitor_list_idx and its pages by their
        check, where a search by URL (no index covers it) read every later
        result of the monitor for each page. A page that has no screenshot in
        that check (it failed there, say) keeps none. A fixed number of
        queries for any number of results."""
        Check = self.model._meta.get_field("check_run").related_model
        going = list(
            self.filter(metadata__has_key="screenshot")
            .order_by("check_run__created_at", "created_at")
            .values_list(
                "pk",
                "check_run_id",
                "check_run__monitor_id",
                "target_id",
                "url",
                KT("metadata__screenshot"),
            )
        )
        if not going:
            return
        # Per page, the screenshot of its latest result that goes and that
        # result's check: what the page's next result is compared with.
        last: dict[tuple[Any, Any, str], tuple[Any, str]] = {}
        monitor_of: dict[Any, Any] = {}
        for _pk, check_id, monitor_id, target_id, url, digest in going:
            last[(monitor_id, target_id, url)] = (check_id, digest)
            monitor_of[check_id] = monitor_id
        following_check = Check.objects.filter(
            monitor_id=OuterRef("monitor_id"), created_at__gt=OuterRef("created_at")
        ).order_by("created_at")
        next_check = dict(
            Check.objects.filter(pk__in={check_id for check_id, _ in last.values()})
            .annotate(following=Subquery(following_check.values("pk")[:1]))
            .values_list("pk", "following")
        )
        # The next check is of the same monitor as the one before it.
        monitor_of.update(
            {after: monitor_of[before] for before, after in next_check.items()}
        )
        following = (
            PageResult.objects.filter(
                check_run__in={pk for pk in next_check.values() if pk is not None},
                url__in={url for _monitor, _target, url in last},
                metadata__has_key="screenshot",
            )
            .exclude(pk__in=[row[0] for row in going])
            .only("pk", "check_run_id", "target_id", "url", "visual_change")
        )
        handed: list[tuple[PageResult, str]] = []
        for page in following:
            key = (monitor_of.get(page.check_run_id), page.target_id, page.url)
            check_id, digest = last.get(key, (None, ""))
            if check_id is not None and next_check.get(check_id) == page.check_run_id:
                handed.append((page, digest))
        PageResult.keep_previous_screenshots(handed)

    def stamp_after_latest(self, check: Any, now: datetime) -> datetime:
        """When a batch of `check`'s pages is recorded: `now`, or just after
        its latest page if that was stamped later. Its pages are listed in the
        order recorded (created_at, id) and read by offset (`skip`) while the
        check runs; batches come one at a time (record holds the check's row
        locked), but from workers on other machines, with other clocks, and a
        batch stamped before one already listed would move rows a reader has
        seen onto its next page. Served by page_check_order_idx."""
        latest = self.filter(check_run=check).aggregate(at=Max("created_at"))["at"]
        if latest is None or latest < now:
            return now
        return latest + timedelta(microseconds=1)

    def changed_in_each(
        self, check_ids: Sequence[Any], most_pages: int
    ) -> PageResultQuerySet:
        """Results of pages that changed in every one of `check_ids` (at most
        `most_pages` addresses, in address order), so nothing is read for a page
        that stayed the same in one of them."""
        changed = self.filter(
            check_run_id__in=check_ids, status=PageResult.Status.CHANGED
        )
        urls = (
            changed.values("url")
            .annotate(checks=models.Count("check_run_id", distinct=True))
            .filter(checks=len(check_ids))
            .order_by("url")
            .values_list("url", flat=True)[:most_pages]
        )
        return changed.filter(url__in=list(urls)).only(
            "check_run_id", "url", "packed_diff", "stored_diff",
            "previous_snapshot_id", "current_snapshot_id",
        )  # fmt: skip

    def changes_first(self) -> PageResultQuerySet:
        """Changed pages first, then new, removed, failed and unchanged ones,
        each in the order they were checked."""
        order = Case(
            *(
                When(status=status, then=Value(rank))
                for rank, status in enumerate(CHANGES_FIRST)
            ),
            default=Value(len(CHANGES_FIRST)),
            output_field=models.IntegerField(),
        )
        return self.order_by(order, "created_at", "id")

    def with_last_titles(self) -> PageResultQuerySet:
        """`last_title` on removed pages and pages that could not be checked:
        the title the page had when it was last there, kept on its baseline,
        since what answers now (a 404, an error, or nothing) has none. Found
        by the URL's hash, as one_state_per_page holds it, so each row is one
        probe of that index rather than a read of every baseline of its
        target (a whole crawl's, when a large site is down)."""
        state_title = PageState.objects.filter(
            monitor_id=OuterRef("check_run__monitor_id"),
            target_id=OuterRef("target_id"),
            url_hash=UrlHash(OuterRef("url")),
            url=OuterRef("url"),
        ).values(title=KT("metadata__title"))[:1]
        return self.annotate(
            last_title=Case(
                When(
                    status__in=(PageResult.Status.REMOVED, PageResult.Status.ERROR),
                    then=Subquery(state_title),
                ),
                default=Value(None),
                output_field=models.TextField(null=True),
            )
        )

    def linked_but_gone(self) -> dict[str, int]:
        """Per target id: removed pages that a crawl still found a link to
        (they answered 404 or 410), which it counts among the pages found."""
        rows = (
            self.filter(status=PageResult.Status.REMOVED, status_code__isnull=False)
            .order_by()
            .values_list("target_id")
            .annotate(n=models.Count("id"))
        )
        return {str(target_id): n for target_id, n in rows}

    def outcome_counts(self) -> tuple[Counter[str], Counter[str]]:
        """(pages by status, search results by searchStatus) in one query:
        a search result is counted only under its own outcome."""
        pages: Counter[str] = Counter()
        found: Counter[str] = Counter()
        rows = (
            self.order_by()
            .values_list("status", KT("metadata__searchStatus"))
            .annotate(n=models.Count("id"))
        )
        for status, search_status, n in rows:
            if search_status:
                found[search_status] += n
            else:
                pages[status] += n
        return pages, found

    def changes_that_matter(self) -> PageResultQuerySet:
        """Pages found changed, new or removed, but for changes the judge
        called unimportant: one check's share of
        CheckQuerySet.with_changes_that_matter, and what a channel told of
        meaningful changes only hears of (checks.notify.reports). Where
        nobody judged a change (judging off, no AI model, the judge failed
        open) it counts."""
        return self.filter(
            status__in=(
                PageResult.Status.CHANGED,
                PageResult.Status.NEW,
                PageResult.Status.REMOVED,
            )
        ).exclude(verdict=PageResult.Verdict.NOISE)

    def judged_unimportant(self) -> PageResultQuerySet:
        """Changed pages the judge called unimportant for the goal."""
        return self.filter(
            status=PageResult.Status.CHANGED, verdict=PageResult.Verdict.NOISE
        )

    def not_judged_per_check(self, check_ids: Sequence[Any]) -> dict[Any, int]:
        """How many changed pages of each of these checks the judge failed
        on (no verdict, reported like any change), by check; checks with
        none are left out."""
        if not check_ids:
            return {}
        rows = (
            self.filter(
                check_run__in=list(check_ids),
                status=PageResult.Status.CHANGED,
                verdict=PageResult.Verdict.NOT_JUDGED,
            )
            .values_list("check_run")
            .annotate(n=models.Count("id"))
            .order_by()
        )
        return dict(rows)

    def history_of(self, page: PageResult) -> PageResultQuerySet:
        """Every result of `page`'s page (its target and address), newest
        first, read from the page index (target, address, time). A target
        belongs to one monitor, and an id with another monitor's pages filed
        under it is never given to a new target (monitors.editing._free), so
        this is scoped to the page's monitor without joining its checks: the
        join let PostgreSQL walk every check of the monitor and each check's
        pages instead."""
        return self.filter(
            target_id=page.target_id,
            url=page.url,
        ).order_by("-created_at", "-id")

    def latest_status_of(self, urls: list[str]) -> dict[str, str]:
        """The status of the newest of these results at each of these
        addresses, by address. One query, reading only these addresses'
        results (through page_target_url_idx when filtered by target)."""
        newest_first = [F("created_at").desc(), F("id").desc()]
        rows = (
            self.filter(url__in=urls)
            .annotate(
                rank=Window(RowNumber(), partition_by=F("url"), order_by=newest_first)
            )
            .filter(rank=1)
            .values_list("url", "status")
        )
        return dict(rows)

    def versions_before(self, page: PageResult) -> PageResultQuerySet:
        """The earlier results of `page`'s page (its monitor, target and
        address) that stored a new copy of it and still have it: the versions
        it can be compared with, newest first."""
        return self.history_of(page).filter(
            status__in=(PageResult.Status.NEW, PageResult.Status.CHANGED),
            current_snapshot__isnull=False,
            created_at__lt=page.created_at,
        )

    def with_judged_by(self) -> PageResultQuerySet:
        """Who judged each (metadata.judgedBy), for lists that leave the
        metadata out but tell changes set aside by rules apart."""
        return self.annotate(judged_by=KT("metadata__judgedBy"))

    def unjudged_changes(self) -> PageResultQuerySet:
        """Changed pages without a verdict: the judge failed open, or did not
        run (no goal then, or judging off)."""
        return self.filter(status=PageResult.Status.CHANGED).exclude(
            verdict__in=(PageResult.Verdict.MEANINGFUL, PageResult.Verdict.NOISE)
        )


def _as_derived(diff: dict[str, Any] | None) -> dict[str, Any] | None:
    """A diff stored before diffs were packed, answered as a packed one is: its
    parse-diff AST derived from its text again, key order and all (PostgreSQL
    keeps JSON objects with their keys reordered)."""
    if not isinstance(diff, dict) or not isinstance(diff.get("text"), str):
        return diff
    found = diff.get("json")
    if not (isinstance(found, dict) and "files" in found):
        return diff
    text = diff["text"]
    rest = {k: v for k, v in diff.items() if k not in ("text", "json")}
    return {"text": text, "json": diff_ast(text), **rest}


class PageResult(models.Model):
    """One page's outcome in one check (MonitorCheckPage on the wire)."""

    class Status(models.TextChoices):
        SAME = "same"
        CHANGED = "changed"
        NEW = "new"
        REMOVED = "removed"
        ERROR = "error"

    # What a page that is gone answers, as Firecrawl does: `removed` once, then
    # `same` while it stays gone (checks.pipeline.extract).
    GONE_STATUS_CODES = frozenset({404, 410})

    class Verdict(models.TextChoices):
        """What the goal judge made of a changed page (checks.ai.judge)."""

        NONE = "", "judge did not run"
        MEANINGFUL = "meaningful", "meaningful"
        NOISE = "noise", "not meaningful"
        # Failed open (no model, an error, no usable answer): the judgment
        # says meaningful with low confidence, and it is no verdict.
        NOT_JUDGED = "not_judged", "not judged"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: page_check_status_idx starts with the check.
    check_run = models.ForeignKey(
        "checks.Check", on_delete=models.CASCADE, related_name="pages", db_index=False
    )
    target_id = models.UUIDField()
    url = models.URLField(max_length=2048)
    status = models.CharField(max_length=16, choices=Status.choices)
    previous_scrape_id = models.UUIDField(null=True, blank=True)
    current_scrape_id = models.UUIDField(null=True, blank=True)
    previous_snapshot = models.ForeignKey(
        Snapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    current_snapshot = models.ForeignKey(
        Snapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(null=True, blank=True)
    # What kind of failure `error` is, for code and plain words to go by; ""
    # on pages without an error and on rows written before kinds existed.
    error_kind = models.CharField(
        max_length=32, blank=True, default="", choices=ErrorKind.choices()
    )
    metadata = models.JSONField(default=dict, blank=True)
    # The diff ({"text": unified diff, "json": parse-diff AST or JSON mode's
    # field diff}; `diff` below) of a changed page, compressed, the AST left
    # to be derived from the text: about the size of a compressed snapshot.
    packed_diff = models.BinaryField(null=True, blank=True)
    # Rows written before diffs were packed keep theirs here, read as they are.
    stored_diff = models.JSONField(null=True, blank=True, db_column="diff")
    judgment = models.JSONField(null=True, blank=True)
    verdict = models.CharField(
        max_length=16, choices=Verdict.choices, default=Verdict.NONE, blank=True
    )
    # JSON extraction monitoring: the page's full extraction (snapshot.json).
    extraction = models.JSONField(null=True, blank=True)
    # The `summary` format: a short summary of the page by the model.
    summary = models.TextField(null=True, blank=True)
    # Screenshots and PDFs of this result (its metadata names them by hash):
    # what keeps them from retention's purge of unreferenced captures.
    captures = models.ManyToManyField(Capture, related_name="pages", blank=True)
    # How the screenshot differs from the previous one (the changed places as
    # boxes, how much they cover, and the two captures compared), kept the
    # first time it is shown (checks.captures.visual_change_of).
    visual_change = models.JSONField(null=True, blank=True)
    # On the database's clock in a worker, as its check's times are
    # (checks.shared_clock); the record stage stamps each batch after the
    # check's latest page (PageResultQuerySet.stamp_after_latest), so a
    # check's pages are in the order they were recorded.
    created_at = models.DateTimeField(default=shared_clock.now, editable=False)

    objects = PageResultQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["check_run", "status"], name="page_check_status_idx"),
            models.Index(
                fields=["check_run", "created_at"], name="page_check_order_idx"
            ),
            # A page's history and the versions it can be compared with.
            models.Index(
                fields=["target_id", "url", "created_at"], name="page_target_url_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url}: {self.status}"

    def get_absolute_url(self) -> str:
        check = self.check_run
        return reverse(
            "page-diff",
            kwargs={"pk": check.monitor_id, "check_id": check.pk, "page_id": self.pk},
        )

    @classmethod
    def says_still_gone(
        cls, status: str, status_code: int | None, error_kind: str = ""
    ) -> bool:
        """Whether a result with this status, HTTP status and kind is a page
        that was reported removed before and still answers 404/410, or still
        shows the site's "not found" page with a 200: `same` on the wire,
        since nothing changed, but not an unchanged page to a reader."""
        if status != cls.Status.SAME:
            return False
        return (
            status_code in cls.GONE_STATUS_CODES
            or error_kind == ErrorKind.NOT_FOUND_PAGE
        )

    @property
    def is_still_gone(self) -> bool:
        return self.says_still_gone(self.status, self.status_code, self.error_kind)

    @property
    def diff(self) -> dict[str, Any] | None:
        """The page's diff, as the API and messages show it; None unless the
        page changed."""
        packed = self.packed_diff
        if packed is None:
            return _as_derived(self.stored_diff)
        cached = self.__dict__.get("_unpacked")
        if cached is None or cached[0] is not packed:
            snapshots = {}
            if packed_against(bytes(packed)):
                ids = (self.previous_snapshot_id, self.current_snapshot_id)
                snapshots = Snapshot.packed(pk for pk in ids if pk)
            cached = (packed, self._unpacked_diff(snapshots))
            self.__dict__["_unpacked"] = cached
        return cached[1]

    @diff.setter
    def diff(self, value: dict[str, Any] | None) -> None:
        self.packed_diff, self.stored_diff = pack_diff(value), None

    def set_diff(self, value: dict[str, Any] | None, reference: bytes | None) -> None:
        """The diff, packed against the two snapshots it compares
        (checks.content.diff_reference) when `reference` is given."""
        self.packed_diff, self.stored_diff = pack_diff(value, reference), None
        self.__dict__["_unpacked"] = (self.packed_diff, value)

    @classmethod
    def with_diffs(cls, pages: Sequence[PageResult]) -> Sequence[PageResult]:
        """`pages` with their diffs unpacked, the snapshots their diffs were
        packed against read in one query."""
        ids = {
            pk
            for page in pages
            if page.packed_diff is not None and packed_against(bytes(page.packed_diff))
            for pk in (page.previous_snapshot_id, page.current_snapshot_id)
            if pk
        }
        snapshots = Snapshot.packed(ids) if ids else {}
        for page in pages:
            if page.packed_diff is not None:
                page.__dict__["_unpacked"] = (
                    page.packed_diff,
                    page._unpacked_diff(snapshots),
                )
        return pages

    def _unpacked_diff(
        self, snapshots: dict[int, tuple[bytes, str]]
    ) -> dict[str, Any] | None:
        packed = bytes(self.packed_diff or b"")
        if not packed_against(packed):
            return unpack_diff(packed)

        def text(pk: int | None) -> str:
            try:
                return unpack(snapshots[pk][0]) if pk in snapshots else ""
            except ValueError:
                return ""

        reference = diff_reference(
            text(self.previous_snapshot_id), text(self.current_snapshot_id)
        )
        try:
            return unpack_diff(packed, reference)
        except ValueError:
            return None  # a snapshot it was packed against is gone, and it too

    @property
    def is_meaningful(self) -> bool | None:
        """isMeaningful on the wire: set only when the judge ran on a changed
        page. Not judged counts as meaningful (the judge fails open)."""
        if self.status != self.Status.CHANGED or not self.judgment:
            return None
        return bool(self.judgment.get("meaningful"))

    @property
    def counts_as_meaningful(self) -> bool:
        """A change that matters to a reader (the feeds' mark), one page's
        share of CheckQuerySet.with_changes_that_matter: the judge called it
        meaningful, or nobody judged it -- judging is off for its monitor, or
        the judge failed open, as is_meaningful does. Only a change judged
        noise does not."""
        return self.status == self.Status.CHANGED and self.is_meaningful is not False

    @property
    def set_aside_by_rules(self) -> bool:
        """Judged not meaningful by its monitor's change rules, not by the
        model (checks.pipeline.judge.set_aside)."""
        if self.verdict != self.Verdict.NOISE:
            return False
        # Lists that leave metadata out annotate this (with_judged_by).
        if "judged_by" in self.__dict__:
            return self.__dict__["judged_by"] == "rules"
        return (self.metadata or {}).get("judgedBy") == "rules"

    @property
    def is_judged(self) -> bool:
        """A real verdict, not the fail-open one ("not judged")."""
        return self.verdict in (self.Verdict.MEANINGFUL, self.Verdict.NOISE)

    @property
    def field_changes(self) -> dict[str, Any]:
        """JSON mode's field diff ({path: {previous, current}}), {} otherwise
        (the Markdown diff's "json" is a parse-diff AST, not fields)."""
        fields = (self.diff or {}).get("json") if isinstance(self.diff, dict) else None
        if not isinstance(fields, dict) or "files" in fields:
            return {}
        return fields

    @property
    def screenshot(self) -> str | None:
        """The content hash of this result's screenshot (the format's)."""
        digest = (self.metadata or {}).get("screenshot")
        return digest if isinstance(digest, str) else None

    def previous_screenshot(self) -> str | None:
        """The screenshot of the latest earlier result of this page that has
        one: what the visual change view compares with. Kept on the row once
        it was compared, or once retention deleted that earlier result."""
        kept = (self.visual_change or {}).get("before")
        if isinstance(kept, str):
            return kept
        earlier = (
            PageResult.objects.filter(
                check_run__monitor_id=self.check_run.monitor_id,
                target_id=self.target_id,
                url=self.url,
                created_at__lt=self.created_at,
                metadata__has_key="screenshot",
            )
            .order_by("-created_at")
            .values_list("metadata__screenshot", flat=True)
            .first()
        )
        return earlier if isinstance(earlier, str) else None

    @classmethod
    def keep_previous_screenshots(cls, pages: Sequence[tuple[PageResult, str]]) -> None:
        """Keep each digest as the screenshot before its page's own, its
        capture linked to that page (see
        PageResultQuerySet.hand_over_screenshots): three queries for them
        all."""
        if not pages:
            return
        captures = dict(
            Capture.objects.filter(
                content_hash__in={digest for _, digest in pages}
            ).values_list("content_hash", "pk")
        )
        links = cls.captures.through
        links.objects.bulk_create(
            [
                links(pageresult_id=page.pk, capture_id=captures[digest])
                for page, digest in pages
                if digest in captures
            ],
            ignore_conflicts=True,
        )
        unset = []
        for page, digest in pages:
            if not isinstance((page.visual_change or {}).get("before"), str):
                page.visual_change = {"before": digest}
                unset.append(page)
        cls.objects.bulk_update(unset, ["visual_change"])
