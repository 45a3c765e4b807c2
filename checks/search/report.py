"""A search target's line in targetResults, completed when its check ends:
matches, how many results were judged and what that
cost, and whether judging was degraded -- counted from the pages recorded."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models.fields.json import KT

from checks import shared_clock
from checks.models import Check, PageResult

DEGRADED_REASON = (
    "Results were found but none could be judged; results may be incomplete."
)
# Judging a result (its page fetched, then judged) costs 1 credit, as Firecrawl
# bills it.
JUDGE_CREDITS_PER_RESULT = 1
_JUDGED = (PageResult.Verdict.MEANINGFUL, PageResult.Verdict.NOISE)


def close(check_id: uuid.UUID) -> None:
    """Fill in the search targets' results of a check whose pages are all
    recorded (checks.runner.finish_if_done)."""
    with transaction.atomic():
        check = Check.objects.select_for_update().get(pk=check_id)
        results = check.target_results or []
        if not any(_is_search(result) for result in results):
            return
        counts = _counts(check)
        check.target_results = [
            result
            | _completed(result, counts.get(str(result.get("targetId")), Counter()))
            if _is_search(result)
            else result
            for result in results
        ]
        check.updated_at = shared_clock.now()
        check.save(update_fields=["target_results", "updated_at"])


def _is_search(result: Any) -> bool:
    return (
        isinstance(result, dict)
        and result.get("type") == "search"
        and not result.get("skipped")
    )


def _counts(check: Check) -> dict[str, Counter[str]]:
    """Per target: its pages by searchStatus, and how many were judged."""
    counts: dict[str, Counter[str]] = {}
    rows = PageResult.objects.filter(check_run=check).values_list(
        "target_id", KT("metadata__searchStatus"), "verdict"
    )
    for target_id, search_status, verdict in rows:
        counter = counts.setdefault(str(target_id), Counter())
        counter[search_status or ""] += 1
        if verdict in _JUDGED:
            counter["judged"] += 1
    return counts


def _completed(result: dict[str, Any], counts: Counter[str]) -> dict[str, Any]:
    matches, judged = counts["alert"], counts["judged"]
    skipped = counts["skipped"]
    degraded = skipped > 0 and judged == 0 and matches == 0
    reason = result.get("degradedReason")
    if degraded and not reason:
        reason = DEGRADED_REASON
    return {
        "matches": matches,
        "resultsJudged": judged,
        "judgeCredits": judged * JUDGE_CREDITS_PER_RESULT,
        "judgeDegraded": degraded,
        "degradedReason": reason,
        "summary": summary(result, matches),
    }


def summary(result: dict[str, Any], matches: int) -> str:
    """ "2 matches across 10 results." (and the failure, when the search failed)."""
    found = int(result.get("resultCount") or 0)
    words = (
        f"{matches} match{'es' if matches != 1 else ''} across "
        f"{found} result{'s' if found != 1 else ''}."
    )
    if not result.get("searchCompleted", True):
        words += " " + str(result.get("degradedReason") or "The search failed.")
    return words
