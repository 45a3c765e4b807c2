"""What a finished check has to tell by e-mail and chat: its pages that are
not the same, meaningful first, with their counts, and the diff excerpts an
e-mail shows. Readers are people, not programs: page errors are said in the
dashboard's plain words, and diff excerpts carry no unified-diff hunk headers.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db.models.fields.json import KT

from checks.errors import ErrorKind, error_words, is_raw
from checks.notify.texts import http_href, one_line
from checks.summary import SEARCH_WORDS
from monitors.search_provider import in_message_words
from monitors.target_kinds import TargetFailure

if TYPE_CHECKING:
    from collections.abc import Mapping

    from checks.models import Check

DIFF_PAGES = 5
DIFF_LINES = 24
DIFF_LINE_CHARS = 300
REASON_CHARS = 300
# notificationStatus.email.reason of a check whose every change was judged
# noise: no e-mail, and nothing to channels told of meaningful changes only.
NOT_MEANINGFUL = "not_meaningful"


# What the error page of a failed web search is listed as, in place of its
# address, in a check planned by an older Pagewatch (which gave one a page).
SEARCH_FAILED_PAGE = "Web search"


# Pages the site kept us from (403, 429, a challenge page): every message
# names them so, not as an error of ours.
BLOCKED_STATUS_CODES = frozenset({403, 429})
BLOCKED_WORDS = "blocked by the site"


def site_blocked(status_code: int | None, kind: str | None) -> bool:
    return status_code in BLOCKED_STATUS_CODES or kind == ErrorKind.CHALLENGE


def judge_reason(judgment: dict[str, Any]) -> str:
    """The judge's reason as a message shows it: at most REASON_CHARS, and
    a cut one says so with "…"."""
    return one_line(str(judgment.get("reason") or ""), REASON_CHARS)


def unimportant_words(set_aside: bool) -> str:
    """How a message says a change that does not matter: who decided so."""
    return "set aside by this monitor's rules" if set_aside else "judged unimportant"


@dataclass
class PageLine:
    url: str
    status: str
    # The judge's verdict on a changed page; None when it gave none.
    meaningful: bool | None
    error: str = ""
    reason: str = ""
    pk: Any = None
    # The page's result in Pagewatch (what changed, in full), set for the
    # pages an e-mail lists.
    pagewatch_url: str = ""
    diff_lines: list[str] = field(default_factory=list)
    diff_truncated: bool = False
    # The judge failed open: reported as a change, and said to be unjudged.
    not_judged: bool = False
    # A web search's new match (a `new` page on the wire).
    search_match: bool = False
    # A web search's result that could not be judged (an `error` page on the
    # wire): a search result, not a page of the monitor's.
    unjudged_result: bool = False
    blocked: bool = False
    # Not meaningful by its monitor's change rules (metadata.judgedBy "rules").
    set_aside: bool = False

    @property
    def href(self) -> str | None:
        return http_href(self.url)

    @property
    def styled_diff_lines(self) -> list[tuple[str, str]]:
        """(line, inline style) for the HTML mail: mail clients drop <style>
        blocks, so removed and added lines carry their colours themselves."""
        return [(line, _diff_line_style(line)) for line in self.diff_lines]

    @property
    def label(self) -> str:
        if self.status == "error":
            # "error" is the API's status; the line below it says why.
            if self.blocked:
                return BLOCKED_WORDS
            if self.unjudged_result:
                return SEARCH_WORDS["skipped"][1]
            return "could not be checked"
        if self.status == "changed" and self.not_judged:
            return "changed (not judged)"
        if self.status == "changed" and self.meaningful is True:
            return "changed (meaningful)"
        if self.status == "changed" and self.meaningful is False:
            return f"changed ({unimportant_words(self.set_aside)})"
        if self.search_match:
            return "new match"
        return self.status

    @property
    def rank(self) -> int:
        """Meaningful first: changes that matter, new, errors, removed, noise."""
        if self.status == "changed":
            return 4 if self.meaningful is False else 0
        return {"new": 1, "error": 2, "removed": 3}.get(self.status, 5)


@dataclass
class ChangeReport:
    counts: Counter
    pages: list[PageLine]  # every non-same page, meaningful first
    # Targets that failed their part of the check (a web search that could
    # not be run): no page stands for them, and they are told all the same.
    failures: list[TargetFailure] = field(default_factory=list)

    @property
    def noteworthy(self) -> int:
        pages = sum(self.counts[s] for s in ("changed", "new", "removed", "error"))
        return pages + len(self.failures)

    @property
    def meaningful(self) -> int:
        """Changes the judge called meaningful: what the e-mail calls so."""
        return sum(1 for p in self.pages if p.status == "changed" and p.meaningful)

    @property
    def noise(self) -> int:
        return sum(1 for p in self.pages if p.meaningful is False)

    @property
    def not_judged(self) -> int:
        return sum(1 for p in self.pages if p.status == "changed" and p.not_judged)

    @property
    def judged(self) -> bool:
        return any(p.meaningful is not None for p in self.pages)

    def suppression_reason(self) -> str | None:
        """Why no e-mail is due, or None when one is."""
        return _suppression_reason(self.counts, self.noise, len(self.failures))

    def counts_line(self) -> str:
        """How many pages did what, each count with its noun ("300 pages
        changed, 5 new pages"): it also stands alone in the subject."""
        parts = []
        # Changes the judge called unimportant are counted apart, after what
        # matters: the subject leads with the changes worth opening it for.
        if n := self.counts["changed"] - self.noise:
            parts.append(f"{_pages(n)} changed{self._verdicts()}")
        set_aside = sum(1 for p in self.pages if p.meaningful is False and p.set_aside)
        if n := self.noise - set_aside:
            more = " more" if parts else ""
            parts.append(f"{n}{more} {unimportant_words(False)}")
        if set_aside:
            more = " more" if parts else ""
            parts.append(f"{set_aside}{more} {unimportant_words(True)}")
        if n := self.matches:
            parts.append(f"{n} new match{'es' if n != 1 else ''}")
        if n := self.counts["new"] - self.matches:
            parts.append(f"{n} new page{'s' if n != 1 else ''}")
        if n := self.counts["removed"]:
            parts.append(f"{_pages(n)} removed")
        if n := self.counts["error"] - self.unjudged_results:
            blocked = sum(1 for p in self.pages if p.status == "error" and p.blocked)
            of_them = f" ({blocked} {BLOCKED_WORDS})" if blocked else ""
            parts.append(
                f"{_pages(n)} with {'errors' if n != 1 else 'an error'}{of_them}"
            )
        if n := self.unjudged_results:
            words = SEARCH_WORDS["skipped"]
            parts.append(f"{n} search result{'s' if n != 1 else ''} {words[1]}")
        for label, n in Counter(f.label for f in self.failures).items():
            parts.append(
                f"{label.lower()} failed" + (f" ({n} targets)" if n > 1 else "")
            )
        return ", ".join(parts) or "no changes"

    @property
    def matches(self) -> int:
        """New pages that are a web search's new matches."""
        return sum(1 for p in self.pages if p.status == "new" and p.search_match)

    @property
    def unjudged_results(self) -> int:
        """Errors that are a web search's results the judge could not read,
        counted apart from the monitor's pages (a blocked one stays a page
        the site blocked)."""
        return sum(1 for p in self.pages if p.status == "error" and p.unjudged_result)

    @property
    def only_new(self) -> bool:
        return self.counts["new"] > 0 and self.noteworthy == self.counts["new"]

    def _verdicts(self) -> str:
        """What the judge said of the changed pages, in brackets: only a
        verdict is called meaningful, never a change it did not judge."""
        matter = self.counts["changed"] - self.noise
        if self.not_judged and self.not_judged == matter:
            return " (not judged)"
        if not self.judged:
            return ""
        words = [f"{self.meaningful} meaningful"] if self.meaningful else []
        if self.not_judged:
            words.append(f"{self.not_judged} not judged")
        return f" ({', '.join(words)})" if words else ""


def _pages(n: int) -> str:
    return f"{n} page{'s' if n != 1 else ''}"


# A failed check's error that is not fit to be shown, in its place.
CHECK_FAILED_WORDS = "Something went wrong on our side while checking this monitor."


class FailingReason(NamedTuple):
    words: str | None
    # The address of the page the words are of, when they are a page's.
    url: str | None = None


def failing_reason(check: Check) -> FailingReason:
    """Why a failed check failed, as a "failing" alert says it: its first
    page error in the dashboard's words ("The site refused access (HTTP
    403).") with that page's address, else a target's failure, else the
    check's own error. The check's error alone is mostly its summary ("The
    page could not be checked."), which tells the team nothing they can act
    on."""
    page = (
        check.pages.filter(status="error")
        .order_by("created_at", "id")
        .values_list("error_kind", "status_code", "error", "url")
        .first()
    )
    # Raw internal text (an error page's HTML, a provider's ids, an
    # exception) is never passed on: the kind's own words stand for it.
    if page is not None:
        kind, code, error, url = page
        return FailingReason(error_words(kind, code, error), url)
    for failure in check.target_failures():
        return FailingReason(failure_words(failure))
    if not check.error:
        return FailingReason(None)
    if is_raw(check.error):
        return FailingReason(CHECK_FAILED_WORDS)
    return FailingReason(in_message_words(check.error))


def failure_words(failure: TargetFailure) -> str:
    """What kept a target from its part, as messages say it: raw text (a
    provider's error page) gives way to "The web search failed.", setting
    names to where an administrator reads how to set one up, and a provider's
    refusal of its set-up to plain words (see in_message_words)."""
    if is_raw(failure.reason):
        return f"The {failure.label.lower()} failed."
    return in_message_words(failure.reason)


def _suppression_reason(
    counts: Mapping[str, Any], noise: int, failures: int
) -> str | None:
    def n(status: str) -> int:
        try:
            return int(counts.get(status) or 0)
        except (TypeError, ValueError):
            return 0

    pages = sum(n(s) for s in ("changed", "new", "removed", "error"))
    if not pages + failures:
        return "no_changes"
    only_noise = n("changed") == noise and not (
        n("new") + n("removed") + n("error") + failures
    )
    # A changed page without a judgment counts as meaningful (fail open).
    return NOT_MEANINGFUL if only_noise else None


def finished_suppression_reason(check: Check) -> str | None:
    """change_report(check).suppression_reason() of a finished check, from
    what it stored when it finished (its summary's counts, its changes
    judged noise, its failed targets): no page row is read, however many."""
    return _suppression_reason(
        check.summary or {}, check.noise, len(check.target_failures())
    )


def change_report(check: Check) -> ChangeReport:
    counts: Counter = Counter()
    pages: list[PageLine] = []
    fields = ("url", "status", "error", "error_kind", "status_code", "judgment")
    rows = check.pages.values_list(
        "pk",
        *fields,
        "verdict",
        KT("metadata__searchStatus"),
        KT("metadata__judgedBy"),
    ).order_by("created_at", "id")
    for row in rows:
        pk, url, status, error, kind, code, judgment, verdict, found, by = row
        counts[status] += 1
        if status == "same":
            continue
        meaningful = None
        reason = ""
        not_judged = verdict == "not_judged"  # PageResult.Verdict.NOT_JUDGED
        if status == "changed" and isinstance(judgment, dict) and not not_judged:
            meaningful = bool(judgment.get("meaningful"))
            reason = judge_reason(judgment)
        # A failed-open judgment says "meaningful" but is no verdict: the page
        # is neither meaningful nor noise here (so still mailed), and
        # the label says it was not judged.
        # The stored error is written for the API ("ReadTimeout…", "HTTP 404"):
        # the message says it in the words of its kind.
        said = error_words(kind, code, error) if (error or kind) else ""
        if kind == ErrorKind.SEARCH_FAILED:
            # Its address is the search provider's, often on the internal
            # network: nothing for a reader to open, or to be shown.
            url = SEARCH_FAILED_PAGE
        line = PageLine(url, status, meaningful, said, reason, pk)
        line.not_judged = not_judged
        line.set_aside = by == "rules"  # checks.pipeline.outcome.RULES_JUDGED
        line.search_match = found == "alert"
        line.blocked = status == "error" and site_blocked(code, kind)
        line.unjudged_result = found == "skipped" and not line.blocked
        pages.append(line)
    pages.sort(key=lambda p: p.rank)
    failures = [
        TargetFailure(failure.label, failure_words(failure))
        for failure in check.target_failures()
    ]
    return ChangeReport(counts, pages, failures)


_REMOVED_STYLE = "background: #fde8e8; color: #8a1c1c;"
_ADDED_STYLE = "background: #e6f4ea; color: #14532d;"
_GAP_STYLE = "color: #6b7280;"


def _diff_line_style(line: str) -> str:
    if line == GAP:
        return _GAP_STYLE
    if line.startswith("-"):
        return _REMOVED_STYLE
    if line.startswith("+"):
        return _ADDED_STYLE
    return ""


_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
GAP = "…"


def _without_hunk_headers(lines: list[str]) -> list[str]:
    """A hunk header ("@@ -12,5 +12,7 @@") means nothing to a reader: it
    becomes a "…" line where lines were left out, and goes where none were
    (a first hunk starting at the top of the page)."""
    shown = []
    for line in lines:
        if not line.startswith("@@"):
            shown.append(line)
            continue
        match = _HUNK.match(line)
        at_top = match is not None and int(match[1]) <= 1 and int(match[2]) <= 1
        if not (at_top and not shown):
            shown.append(GAP)
    return shown


def diff_excerpt(text: str) -> tuple[list[str], bool]:
    """The first DIFF_LINES lines of a unified diff's hunks, each bounded."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("@@")), 0)
    body = _without_hunk_headers(lines[start:])
    shown = [
        line if len(line) <= DIFF_LINE_CHARS else line[:DIFF_LINE_CHARS] + "…"
        for line in body[:DIFF_LINES]
    ]
    return shown, len(body) > DIFF_LINES


def attach_diffs(check: Check, report: ChangeReport) -> None:
    chosen = [
        p for p in report.pages if p.status == "changed" and p.meaningful is not False
    ]
    chosen = chosen[:DIFF_PAGES]
    rows = check.pages.filter(pk__in=[p.pk for p in chosen])
    rows = rows.only(
        "pk", "packed_diff", "stored_diff", "previous_snapshot", "current_snapshot"
    )
    diffs = {row.pk: row.diff for row in rows.model.with_diffs(list(rows))}
    for page in chosen:
        text = (diffs.get(page.pk) or {}).get("text")
        if isinstance(text, str) and text:
            page.diff_lines, page.diff_truncated = diff_excerpt(text)
