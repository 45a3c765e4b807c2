"""What the AI model was asked and what it used, for whom.

One row per check and kind of call (never one per page: a 5,000-page crawl
would be 5,000 rows an hour), with the tokens the model's answers reported;
each batch adds its share as its pages are judged. A compatible server may
leave `usage` out of its answers: those requests are counted in
`unmeasured`, never guessed.
Rows outlive their checks and monitors (kept for the month's figures), and
go with their team or after thirteen months (checks.retention).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import F, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from checks.models.check import month_start
from monitors.models import Monitor, Team

if TYPE_CHECKING:
    from checks.ai.client import Use
    from checks.models.check import Check


def _tokens() -> Any:
    return Coalesce(Sum(F("prompt_tokens") + F("completion_tokens")), 0)


class AIUseQuerySet(models.QuerySet["AIUse"]):
    def this_month(self, now: datetime) -> AIUseQuerySet:
        """Use in the UTC calendar month of `now`: the credits' month too
        (CheckQuerySet.credits_used). Served by ai_use_team_month_idx."""
        return self.filter(created_at__gte=month_start(now))

    def tokens(self) -> int:
        """Tokens reported, prompt and answer together: one query."""
        return int(self.aggregate(total=_tokens())["total"])

    def totals(self) -> dict[str, int]:
        """Requests, tokens and requests whose answers told no tokens."""
        return self.aggregate(
            requests=Coalesce(Sum("requests"), 0),
            tokens=_tokens(),
            unmeasured=Coalesce(Sum("unmeasured"), 0),
        )

    def by_monitor(self, limit: int) -> list[dict[str, Any]]:
        """The monitors that used the most tokens, most first (a deleted
        monitor's use under None)."""
        rows = (
            self.values("monitor_id", "monitor__name")
            .annotate(
                requests=Coalesce(Sum("requests"), 0),
                tokens=_tokens(),
                unmeasured=Coalesce(Sum("unmeasured"), 0),
            )
            .order_by("-tokens", "-requests")
        )
        return list(rows[:limit])

    def by_kind(self) -> dict[str, dict[str, int]]:
        """Every row's requests and tokens by kind of call (/metrics)."""
        rows = self.values("kind").annotate(
            requests=Coalesce(Sum("requests"), 0),
            prompt=Coalesce(Sum("prompt_tokens"), 0),
            completion=Coalesce(Sum("completion_tokens"), 0),
            unmeasured=Coalesce(Sum("unmeasured"), 0),
        )
        return {row.pop("kind"): row for row in rows}

    def record(self, check: Check, used: Mapping[str, Use]) -> None:
        """Add the use of some of `check`'s calls to its row of each kind.
        Batches of one check record at once on several workers: a row they
        both created is a second row of the same kind, which the sums take
        as they take any other. A check running past the end of a month
        starts a new row there, so each month counts its own tokens."""
        monitor = check.monitor
        now = timezone.now()
        this_month = self.filter(check_run=check).this_month(now)
        for kind, use in used.items():
            if not use.requests:
                continue
            added = this_month.filter(kind=kind).update(
                requests=F("requests") + use.requests,
                prompt_tokens=F("prompt_tokens") + use.prompt_tokens,
                completion_tokens=F("completion_tokens") + use.completion_tokens,
                unmeasured=F("unmeasured") + use.unmeasured,
            )
            if not added:
                self.create(
                    team_id=monitor.team_id,
                    monitor=monitor,
                    check_run=check,
                    kind=kind,
                    requests=use.requests,
                    prompt_tokens=use.prompt_tokens,
                    completion_tokens=use.completion_tokens,
                    unmeasured=use.unmeasured,
                    created_at=now,
                )


class AIUse(models.Model):
    class Kind(models.TextChoices):
        # The names the calls give the client (checks.ai.client.LLM.ask).
        JUDGMENT = "judgment", "judging changes against the goal"
        EXTRACTION = "extraction", "reading data from pages"
        SUMMARY = "summary", "summaries of pages"
        RELEVANCE = "relevance", "judging search results"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    monitor = models.ForeignKey(
        Monitor, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    check_run = models.ForeignKey(
        "checks.Check", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    requests = models.PositiveIntegerField(default=0)
    # Summed over the requests whose answers reported them.
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    # Requests answered without `usage`: their tokens are unknown.
    unmeasured = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    objects = AIUseQuerySet.as_manager()

    class Meta:
        indexes = [
            # A team's month: the allowance check before each batch's calls
            # (checks.ai.allowance) and the team page.
            models.Index(fields=["team", "created_at"], name="ai_use_team_month_idx"),
            # A monitor's month on its page.
            models.Index(
                fields=["monitor", "created_at"], name="ai_use_monitor_month_idx"
            ),
            # The months past keeping (checks.retention.purge_expired).
            models.Index(fields=["created_at"], name="ai_use_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.requests} requests"
