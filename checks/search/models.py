"""A search's rows: the results found in a check, and what a search target
knows of each result across checks."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from monitors.models import Monitor


class SearchRun(models.Model):
    """One search target's search within one check (checks.search): what the
    provider found, merged and cut to the target's rules, and whether every
    query was answered. Written when the check is planned, so each batch
    knows its results' titles, snippets and matched queries."""

    check_run = models.ForeignKey(
        "checks.Check",
        on_delete=models.CASCADE,
        related_name="searches",
        db_index=False,
    )
    target_id = models.UUIDField()
    provider = models.CharField(max_length=16)
    # [{url, key, title, snippet, publishedAt, queries}], in the order kept.
    results = models.JSONField(default=list)
    # Results the provider returned across queries, before any filter (what
    # search credits are counted on).
    raw_count = models.PositiveIntegerField(default=0)
    # Why a query failed ("" when every query was answered), and the address
    # its error page is recorded under.
    failure = models.TextField(blank=True)
    endpoint = models.URLField(max_length=2048, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["check_run", "target_id"], name="one_search_per_target"
            )
        ]

    def __str__(self) -> str:
        return f"search of target {self.target_id} in check {self.check_run_id}"


class SearchResultStateQuerySet(models.QuerySet["SearchResultState"]):
    def alerted(self) -> SearchResultStateQuerySet:
        """Results that alerted, newest first; served by search_alerted_idx."""
        return self.filter(alerted_at__isnull=False).order_by("-alerted_at", "-id")


class SearchResultState(models.Model):
    """What one search target knows of one result (by canonical URL): the
    search target's baseline. A result alerts once; a verdict holds while
    the goal and queries it was given under (goal_version) stay the same.
    Never deleted by retention, like PageState."""

    class Status(models.TextChoices):
        ALERTED = "alerted"
        IGNORED = "ignored"  # judged not relevant to the goal
        WATCHING = "watching"  # relevant, but the judge was not confident
        SKIPPED = "skipped"  # no verdict: the page or the judge failed

    # No index of its own: one_state_per_result starts with the monitor.
    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="search_results", db_index=False
    )
    target_id = models.UUIDField()
    # SHA-256 of the canonical URL (checks.search.canonical).
    key = models.CharField(max_length=64)
    url = models.URLField(max_length=2048)
    title = models.CharField(max_length=500, blank=True)
    snippet = models.TextField(blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    queries = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    goal_version = models.CharField(max_length=32, blank=True)
    judgment = models.JSONField(null=True, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    alerted_at = models.DateTimeField(null=True, blank=True)
    # The check that alerted (no foreign key: retention may delete it).
    alert_check_id = models.UUIDField(null=True, blank=True)

    objects = SearchResultStateQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["monitor", "target_id", "key"], name="one_state_per_result"
            )
        ]
        indexes = [
            # Used by the dashboard's stream of alerted results of a monitor
            # (SearchResultStateQuerySet.alerted).
            models.Index(
                fields=["monitor", "-alerted_at"],
                name="search_alerted_idx",
                condition=Q(alerted_at__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.status})"

    UPSERT_FIELDS = (
        "url", "title", "snippet", "published_at", "queries", "status",
        "goal_version", "judgment", "last_seen_at", "alerted_at", "alert_check_id",
    )  # fmt: skip

    @classmethod
    def upsert(cls, states: list[SearchResultState]) -> None:
        """Insert these results' states or update the stored ones (first_seen_at
        stays as it was): one INSERT ... ON CONFLICT DO UPDATE."""
        cls.objects.bulk_create(
            states,
            update_conflicts=True,
            unique_fields=["monitor", "target_id", "key"],
            update_fields=cls.UPSERT_FIELDS,
        )
