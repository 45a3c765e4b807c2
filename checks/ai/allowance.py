"""A team's AI use this month, and its allowance (LLM_MONTHLY_TOKENS_PER_TEAM).

The month is the UTC calendar month, as for credits (CheckQuerySet.
credits_used). Tokens are those the model's answers reported
(checks.models.AIUse); requests answered without a count are shown as such
and do not count against the allowance, which is never guessed.

Each batch asks once, before its first call (checks.ai.stage.Enricher,
checks.search.stage.SearchStage): one aggregate query. A batch that started
below the allowance makes all its calls, and a crawl's batches run at once
on several workers, so a team can go over it by the calls of as many batches
as run at once; the batches after them make none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings

from checks.ai.formats import wants
from checks.models import AIUse, month_start
from monitors.models import Monitor, Team

# The monitors listed on the team page as having used the most.
TOP_MONITORS = 5


def allowance() -> int | None:
    """Tokens each team may use per month; None: no limit."""
    return getattr(settings, "LLM_MONTHLY_TOKENS_PER_TEAM", None)


def next_month(start: datetime) -> datetime:
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


def renews_on(start: datetime) -> str:
    """The day the allowance of the month beginning at `start` renews:
    "1 December"."""
    renews = next_month(start)
    return f"{renews.day} {renews:%B}"


def used_up_words(now: datetime) -> str:
    """Why a team's calls are not made, for a change's "not judged" reason."""
    start = month_start(now)
    return (
        f"this team's AI allowance for {start:%B} is used up; it renews on "
        f"{renews_on(start)}"
    )


def used_up(team_id: Any, now: datetime) -> str | None:
    """Why `team_id`'s calls may not be made now (its month's tokens reached
    the allowance); None while they may. One query, none without a limit."""
    limit = allowance()
    if limit is None:
        return None
    used = AIUse.objects.filter(team_id=team_id).this_month(now).tokens()
    return used_up_words(now) if used >= limit else None


def asks_the_model(monitor: Monitor) -> bool:
    """Whether `monitor`'s checks call the model: it judges changes, or one
    of its targets reads data or summaries with it."""
    return monitor.judging or any(
        wants(target.scrape_options or {}).model_formats
        for target in monitor.target_list
    )


def about(number: int) -> str:
    """A count as people say it: 312, 4,800, about 56 thousand, about 1.4 million."""
    if number < 10_000:
        return f"{number:,}"
    # Rounded before the unit is chosen: 999,600 is about 1 million, not
    # "about 1,000 thousand".
    thousands = round(number / 1000)
    if thousands < 1000:
        return f"about {thousands:,} thousand"
    return f"about {number / 1_000_000:.1f} million".replace(".0 ", " ")


@dataclass(frozen=True)
class MonthUse:
    """What a team or a monitor used of the model this month, in words."""

    requests: int
    tokens: int
    unmeasured: int
    start: datetime
    # The team's allowance (None: no limit); only a team's use has one.
    limit: int | None = None
    # The monitors that used the most (a team's use only).
    monitors: tuple[dict[str, Any], ...] = ()

    @classmethod
    def of_team(cls, team: Team, now: datetime) -> MonthUse:
        rows = AIUse.objects.filter(team=team).this_month(now)
        return cls(
            **rows.totals(),
            start=month_start(now),
            limit=allowance(),
            monitors=tuple(rows.by_monitor(TOP_MONITORS)),
        )

    @classmethod
    def of_monitor(cls, monitor: Monitor, now: datetime) -> MonthUse:
        rows = AIUse.objects.filter(monitor=monitor).this_month(now)
        return cls(**rows.totals(), start=month_start(now))

    @property
    def monitor_lines(self) -> list[str]:
        """ "Pricing: 40 requests to the AI model, about 12 thousand tokens"."""
        lines = []
        for row in self.monitors:
            use = MonthUse(
                row["requests"], row["tokens"], row["unmeasured"], self.start
            )
            lines.append(f"{row['monitor__name'] or 'Deleted monitors'}: {use.words}")
        return lines

    @property
    def used_up(self) -> bool:
        return self.limit is not None and self.tokens >= self.limit

    @property
    def words(self) -> str:
        """ "312 requests to the AI model, about 1.4 million tokens"."""
        if not self.requests:
            return "no requests to the AI model"
        requests = "request" if self.requests == 1 else "requests"
        said = f"{self.requests:,} {requests} to the AI model"
        if self.unmeasured == self.requests:
            return f"{said}; the model did not say how many tokens they used"
        tokens = "token" if self.tokens == 1 else "tokens"
        said = f"{said}, {about(self.tokens)} {tokens}"
        if self.unmeasured:
            said += (
                f" ({self.unmeasured:,} of the requests were answered without "
                "saying how many tokens they used)"
            )
        return said

    @property
    def limit_words(self) -> str:
        """The allowance and when it renews; empty without one."""
        if self.limit is None:
            return ""
        renews = renews_on(self.start)
        if self.used_up:
            return (
                f"This team's AI allowance for {self.start:%B} "
                f"({about(self.limit)} tokens) is used up: changes are reported "
                f"without being judged, and pages that read data with the AI "
                f"model show an error, until it renews on {renews}."
            )
        left = self.limit - self.tokens
        return (
            f"This team may use {about(self.limit)} tokens a month; "
            f"{about(left)} are left, and it renews on {renews}."
        )
