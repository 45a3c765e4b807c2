"""What the stages hand each other: a page's work and its outcome.

    PageWork   a page to check: its job and its baseline (plan -> fetch)
    Outcome    what the check says of the page (extract -> compare -> judge
               -> record), each part written by the stage named beside it
    Item       (job, outcome, baseline): a page on its way to the record
    CheckAbandoned  what any stage raises when the check stopped being ours

The words every page result carries (how it was fetched and why, the options
it was fetched without) are here too, since every stage that makes an
outcome starts from them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from checks.ai import llm_available
from checks.browser.options import browser_options
from checks.browser.result import Shot
from checks.content import Pack, pack_snapshot
from checks.content.ocr import UNKNOWN_VERSION
from checks.content.ocr import available as ocr_available
from checks.content.ocr import reading as ocr_reading
from checks.content.options import pdf_mode
from checks.jobs import PageJob, Via
from checks.models import PageResult, PageState
from checks.targets.options import SCRAPE_OPTION_NAMES, is_set, unknown_options

# Formats extract() produces; the browser adds screenshots; anything else
# needs an LLM.
APPLIED_FORMATS = frozenset(
    {"markdown", "html", "rawHtml", "links", "images", "changeTracking"}
)
BROWSER_FORMATS = frozenset({"screenshot"})
# Formats the model applies (checks.ai.stage), when one is configured.
MODEL_FORMATS = frozenset({"json", "summary"})
# Page metadata that belongs to one check, never replayed from a baseline.
PER_CHECK_METADATA = (
    "notApplied", "cacheState", "cachedAt", "creditsUsed", "screenshot",
    "actions", "blockedRequests", "judgedInPart", "extractedInPart",
    "summaryError", "summarizedInPart", "notFoundUnconfirmed", "judgedBy",
)  # fmt: skip
FETCHED_BECAUSE = {
    Via.OPTIONS: "Its options need a browser ({detail}).",
    Via.REMEMBERED: "An earlier check found this page is built by scripts.",
    Via.DETECTED: "A plain fetch found it built by scripts: {detail}.",
    Via.MONITOR: "Its monitor is set to always use a browser.",
}


# metadata.judgedBy of a page whose change its monitor's rules set aside.
RULES_JUDGED = "rules"


class CheckAbandoned(Exception):
    """The check stopped being ours (failed by the sweeper, deleted) mid-run:
    any stage that writes says so, and the runner ends its work quietly."""


@dataclass(frozen=True)
class PageWork:
    """One page of a batch, as plan hands it to fetch: its job (with the
    fetcher chosen for it) and its baseline (None for a page never seen)."""

    job: PageJob
    baseline: PageState | None


class Pending(NamedTuple):
    """A page whose text differs from its baseline's stored hash: extract
    hands it to compare, which reads the baseline's text to decide."""

    source_format: str
    source: str
    markdown: str


@dataclass
class PageText:
    """The page's text as extract read it, kept for the judges when its
    formats ask the model: its source (format and text) and, when the
    compare stage needed it, its Markdown with the noise lines out."""

    source_format: str
    source: str
    markdown: str | None = None


@dataclass
class Content:
    """What the page's baseline becomes when it is recorded (extract makes
    it, compare settles it): its snapshot (content hash, compressed data,
    size, format; empty data when that content is stored already; None
    while compare has still to decide), the hash of its normalised Markdown
    ("" when unknown), and what lets the next fetch skip work
    (PageState.body_hash and the validators)."""

    snapshot: Pack | None = None
    normalized_hash: str = ""
    body_hash: str = ""
    etag: str = ""
    last_modified: str = ""


@dataclass
class Judged:
    """What the judge stage made of the page: the goal judge's judgment and
    verdict, the JSON extraction and the summary, and PageState.derived to
    store with the baseline (None keeps the stored one)."""

    judgment: dict[str, Any] | None = None
    verdict: str = ""
    extraction: Any = None
    summary: str | None = None
    derived: dict[str, Any] | None = None


@dataclass
class Outcome:
    """What the check says of one page, decided outside any transaction.

    extract sets the result and what the page brought; compare settles a
    `pending` page (status, diff, content); judge adds the model's part;
    record writes it all. A page decided without a fetch (the cache, a
    search result seen before) starts here with its result whole."""

    # The page result (extract; compare and judge may settle it further).
    status: str
    metadata: dict[str, Any]
    status_code: int | None = None
    error: str | None = None
    error_kind: str = ""
    cache_hit: bool = False
    # What becomes the page's baseline (extract, compare); None for a page
    # with no content to keep (an error, a removed page, a cached copy).
    content: Content | None = None
    # extract -> compare: the text to compare with the baseline's.
    pending: Pending | None = None
    # compare: a changed page's diff, and what it is stored packed against
    # (the raw text of both snapshots, checks.content.diff_reference).
    diff: dict[str, Any] | None = None
    diff_reference: bytes | None = None
    # compare -> judge: the compared text of both sides (noise lines out),
    # kept only for a page whose monitor's change rules read whole texts.
    compared: tuple[str, str] | None = None
    # compare -> judge: the baseline's text could not be read (its snapshot
    # is missing or damaged), so the change rules cannot say what changed.
    baseline_unread: bool = False
    # extract -> confirm (checks.pipeline.not_found): the page's Markdown
    # when it may be the site's "not found" page answered with HTTP 200, for
    # the made-up address's answer to be compared with.
    not_found: str | None = None
    # confirm -> record: the hash of the text of the site's "not found" page
    # that a gone page shows, kept with its removed state (PageState).
    not_found_hash: str = ""
    # extract -> judge: the page's text, for pages whose formats ask the model.
    page_text: PageText | None = None
    # judge: what the model made of the page.
    judged: Judged = field(default_factory=Judged)
    # judge (checks.search.stage): a search result's SearchResultState after
    # this check, its baseline, written instead of a PageState.
    search: dict[str, Any] | None = None
    # What the page brought besides its content (fetch, extract): a crawl
    # page's links (absolute, unfiltered; checks.crawl scopes them), the
    # browser's screenshots and PDFs (named in `metadata` by hash), and what
    # the next check fetches it with, when this fetch decides it (None leaves
    # it to how this page was fetched).
    links: list[str] = field(default_factory=list)
    captures: list[Shot] = field(default_factory=list)
    fetcher: str | None = None
    # fetch -> crawl (checks.crawl.frontier): the address a crawl page names
    # as canonical, which makes it a copy of that address when the crawl
    # takes it (Frontier.copies); None when it names none it may be a copy of.
    canonical: str | None = None

    @property
    def snapshot(self) -> Pack | None:
        return self.content.snapshot if self.content is not None else None

    @property
    def is_settled_same(self) -> bool:
        """The same as the baseline, decided without reading its text: the
        very bytes, or text with the baseline's hash."""
        return self.status == PageResult.Status.SAME and self.pending is None

    @property
    def set_aside_by_rules(self) -> bool:
        """Its change was set aside by its monitor's change rules (judge
        stage): not meaningful, and no model is asked about it."""
        return self.metadata.get("judgedBy") == RULES_JUDGED

    @property
    def is_still_gone(self) -> bool:
        """Reported removed before and answering 404/410 (or the site's "not
        found" page) still: no content, and no baseline to compare with."""
        return PageResult.says_still_gone(
            self.status, self.status_code, self.error_kind
        )

    def keep_baseline(
        self, baseline: PageState, source: str, source_format: str, text_hash: str
    ) -> None:
        """The page's text is the baseline's: the baseline's snapshot stays,
        unless it was stored in another format (then it is replaced once)."""
        assert self.content is not None
        self.content.normalized_hash = text_hash
        if baseline.snapshot_format == source_format:
            self.content.snapshot = (baseline.snapshot_hash, b"", 0, "")
        else:
            self.content.snapshot = pack_snapshot(source, source_format)


class Item(NamedTuple):
    """A page on its way to the record: its job, its outcome, its baseline."""

    job: PageJob
    outcome: Outcome
    baseline: PageState | None


def failed(job: PageJob, kind: str, message: str, **fields: Any) -> Outcome:
    """The page as an error, with the words every page result carries."""
    return Outcome(
        PageResult.Status.ERROR,
        base_metadata(job) | fields.pop("metadata", {}),
        error=message,
        error_kind=kind,
        **fields,
    )


# scrapeOptions validated and kept (Firecrawl's contract has them) that no
# stage acts on: listed whenever set, so nothing is dropped unseen.
UNAPPLIED_OPTIONS = (
    "onlyCleanContent",
    "lockdown",
    "redactPII",
    "profile",
    "threatProtection",
)


def not_applied(options: Mapping[str, Any], *, browser: bool = False) -> list[str]:
    """scrapeOptions the page was fetched without: those only a browser
    honours when it came over plain HTTP, those needing an LLM or a proxy
    network always, OCR's modes without an OCR engine, those no stage acts
    on (UNAPPLIED_OPTIONS) and, last, those the API does not know. None of
    them is charged for."""
    skipped = [name for name in UNAPPLIED_OPTIONS if is_set(options.get(name))]
    if not browser:
        skipped += [
            name for name in browser_options(options) if name != "mobile"
        ]  # a mobile User-Agent is sent over HTTP too
    formats = options.get("formats")
    applied = APPLIED_FORMATS | MODEL_FORMATS if llm_available() else APPLIED_FORMATS
    if browser:
        applied |= BROWSER_FORMATS
    for fmt in formats if isinstance(formats, list) else []:
        name = fmt.get("type") if isinstance(fmt, dict) else fmt
        if not isinstance(name, str):
            continue
        if name not in applied:
            skipped.append(f"formats.{name}")
        elif (
            name == "changeTracking"
            and "json" in (fmt.get("modes") or [])
            and "json" not in applied
        ):
            skipped.append("formats.changeTracking.json")
        elif (
            name == "json"
            and isinstance(fmt, dict)
            and fmt.get("checkPromptInjection") is True  # no scan is made
        ):
            skipped.append("formats.json.checkPromptInjection")
    location = options.get("location")
    if isinstance(location, Mapping) and location.get("country"):
        skipped.append("location.country")  # no proxies by country
    elif location and not isinstance(location, Mapping):
        skipped.append("location")
    if options.get("proxy") in ("stealth", "enhanced"):
        skipped.append("proxy")
    if pdf_mode(options.get("parsers")) in ("auto", "ocr") and not ocr_available():
        skipped.append("parsers.mode")  # a PDF's text layer is all that is read
    skipped += unknown_options(options, SCRAPE_OPTION_NAMES)
    return list(dict.fromkeys(skipped))


def base_metadata(job: PageJob) -> dict[str, Any]:
    """What every page result says: its URL, how it was fetched and why, and
    the options it was fetched without."""
    metadata: dict[str, Any] = {"sourceURL": job.url, "creditsUsed": 0}
    metadata["fetchedWith"] = "browser" if job.browser else "http"
    if job.browser:
        reason = FETCHED_BECAUSE.get(Via(job.browser), "")
        metadata["fetchedWithReason"] = reason.format(detail=job.browser_detail)
    skipped = not_applied(job.options, browser=bool(job.browser))
    if skipped:
        metadata["notApplied"] = skipped
    return metadata


def options_hash(options: Mapping[str, Any]) -> str:
    """What the extraction of a body depends on besides the body: the same
    bytes under other scrapeOptions are extracted again."""
    canonical = json.dumps(options, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def read_by_another_engine(state: PageState) -> bool:
    """Whether the baseline's PDF was read with OCR by another engine, or
    with other languages, than the one configured now: its same bytes are
    then read again, and the new reading kept quietly (checks.pipeline.extract),
    so that the next real change does not show the readings' differences."""
    if not state.metadata.get("ocrPages"):
        return False
    now = ocr_reading()
    if now is None or now.startswith(UNKNOWN_VERSION):
        return False  # no engine, or one that did not say: nothing to tell
    return state.metadata.get("ocrEngine") != now
