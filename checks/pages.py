"""Decide one page's status against its baseline, as Firecrawl does.

* first good fetch, or good again after `removed` -> new
* the server says 304, or the body is byte for byte the baseline's (same
  options) -> same, without extracting anything
* same normalised content as the baseline                 -> same
* otherwise                                               -> changed, with a
  unified diff, its AST and the dashboard's side-by-side HTML
* 404/410 while the baseline is present                   -> removed
* 404/410 again after `removed`                           -> same: nothing
  changed since the page was reported gone, so no error, no e-mail; it stays
  removed, and its next good fetch is new again
* fetch or extraction failure, any other 4xx/5xx          -> error; the baseline
  is kept, so the next good fetch diffs against the last good content.

All of it is plain CPU work on data in memory, run inline as each page arrives
(checks.runner). The one step that needs the database, reading the baseline's
text when a page's normalised Markdown hash differs from the stored one, is
left to the runner: `Outcome.pending` says so, and `reconcile()` finishes it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from checks.ai import formats as ai_formats
from checks.ai import llm_available
from checks.browser.options import browser_options
from checks.browser.result import BrowserResult, Shot
from checks.content import (
    ExtractionError,
    Pack,
    compare_texts,
    content_hash,
    diff_reference,
    extract,
    markdown_of,
    pack_snapshot,
    page_links,
    snapshot_hash,
    strip_noise,
    unpack,
)
from checks.errors import ErrorKind
from checks.fetch import FetchError, FetchResult
from checks.jobs import PageJob, Via
from checks.models import PageResult, PageState

logger = logging.getLogger(__name__)

NOT_MODIFIED = 304
# Formats extract() produces; the browser adds screenshots; anything else
# needs an LLM.
APPLIED_FORMATS = frozenset(
    {"markdown", "html", "rawHtml", "links", "images", "changeTracking"}
)
BROWSER_FORMATS = frozenset({"screenshot"})
# Refused browser requests listed in a page's metadata, at most.
BLOCKED_LISTED = 20
# Formats the model applies (checks.ai.stage), when one is configured.
MODEL_FORMATS = frozenset({"json", "summary"})
# Page metadata that belongs to one check, never replayed from a baseline.
PER_CHECK_METADATA = (
    "notApplied", "cacheState", "cachedAt", "creditsUsed", "screenshot",
    "actions", "blockedRequests",
)  # fmt: skip
FETCHED_BECAUSE = {
    Via.OPTIONS: "Its options need a browser ({detail}).",
    Via.REMEMBERED: "An earlier check found this page is built by scripts.",
    Via.DETECTED: "A plain fetch found it built by scripts: {detail}.",
    Via.MONITOR: "Its monitor is set to always use a browser.",
}


@dataclass
class Outcome:
    """A page's result, decided outside any transaction."""

    status: str
    metadata: dict[str, Any]
    status_code: int | None = None
    error: str | None = None
    error_kind: str = ""
    # Hash of the normalised Markdown, when known ("" otherwise).
    normalized_hash: str = ""
    diff: dict[str, Any] | None = None
    # What a changed page's diff is stored packed against (the raw text of
    # both snapshots, checks.content.diff_reference).
    diff_reference: bytes | None = None
    cache_hit: bool = False
    # The page's snapshot: (content hash, compressed data, size, format);
    # empty data when that content is stored already (the baseline's).
    snapshot: Pack | None = None
    # What the next fetch may skip: see PageState.body_hash and validators.
    body_hash: str = ""
    etag: str = ""
    last_modified: str = ""
    # (format, source, Markdown) of a page whose text differs from the stored
    # hash: reconcile() decides between same and changed with the baseline.
    pending: tuple[str, str, str] | None = None
    # A crawl page's links (absolute, unfiltered): checks.crawl scopes them.
    links: list[str] = field(default_factory=list)
    # For the model (checks.ai.stage), on pages whose formats ask for it: the
    # fetched (format, source), and the compared Markdown when it was made.
    source: tuple[str, str] | None = None
    text: str | None = None
    # What the model made of the page (checks.ai.stage).
    judgment: dict[str, Any] | None = None
    verdict: str = ""
    extraction: Any = None
    summary: str | None = None
    # PageState.derived to store with the baseline; None keeps the stored one.
    derived: dict[str, Any] | None = None
    # A search result's SearchResultState after this check (checks.search.stage):
    # the search target's baseline, written instead of a PageState.
    search: dict[str, Any] | None = None
    # Screenshots and PDFs from the browser, named in `metadata` by hash.
    captures: list[Shot] = field(default_factory=list)
    # What the next check fetches this page with, when this fetch decides it
    # (see checks.recording); None leaves it to how this page was fetched.
    fetcher: str | None = None

    @property
    def is_settled_same(self) -> bool:
        """The same as the baseline, decided without reading its text: the
        very bytes, or text with the baseline's hash."""
        return self.status == PageResult.Status.SAME and self.pending is None

    @property
    def is_still_gone(self) -> bool:
        """Reported removed before and answering 404/410 still (see
        _still_gone): no content, and no baseline to compare with."""
        return PageResult.says_still_gone(self.status, self.status_code)


def failed(job: PageJob, kind: str, message: str, **fields: Any) -> Outcome:
    return Outcome(
        PageResult.Status.ERROR,
        base_metadata(job) | fields.pop("metadata", {}),
        error=message,
        error_kind=kind,
        **fields,
    )


def not_applied(options: Mapping[str, Any], *, browser: bool = False) -> list[str]:
    """scrapeOptions the page was fetched without: those only a browser
    honours when it came over plain HTTP, and those needing an LLM or a
    proxy network always."""
    skipped = []
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
    location = options.get("location")
    if isinstance(location, Mapping) and location.get("country"):
        skipped.append("location.country")  # no proxies by country
    elif location and not isinstance(location, Mapping):
        skipped.append("location")
    if options.get("proxy") in ("stealth", "enhanced"):
        skipped.append("proxy")
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


def body_hash(fetched: FetchResult) -> str:
    digest = hashlib.sha256()
    for part in (fetched.final_url, fetched.headers.get("content-type", "")):
        digest.update(part.encode() + b"\0")
    digest.update(fetched.content)
    return digest.hexdigest()


def request_headers(job: PageJob, state: PageState | None) -> dict[str, str]:
    """The job's headers, plus the baseline's validators when the page was
    fetched with the same options: the server may then answer 304 Not
    Modified, which costs neither a body nor an extraction."""
    headers = job.headers
    if state is None or not state.has_baseline or job.follow:
        return headers  # a crawl page's links are read from its body
    if state.options_hash != options_hash(job.options):
        return headers
    validators = {"If-None-Match": state.etag, "If-Modified-Since": state.last_modified}
    present = {k.lower() for k in headers}
    for name, value in validators.items():
        if value and name.lower() not in present:
            headers[name] = value
    return headers


# --- From the cache ------------------------------------------------------------


def _milliseconds(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def from_cache(job: PageJob, state: PageState | None, now: datetime) -> Outcome | None:
    """Serve the page from its last good fetch when maxAge/minAge allow it.

    Monitors default to maxAge 0 (always fetch). With minAge, only the cache
    may answer (as in Firecrawl); no old-enough copy is a page error.
    """
    max_age = _milliseconds(job.options.get("maxAge")) or 0
    min_age = _milliseconds(job.options.get("minAge"))
    cached_at = state.cached_at if state is not None and state.is_cacheable else None
    age_ms = (now - cached_at).total_seconds() * 1000 if cached_at else None
    if min_age is not None and min_age > 0:
        if age_ms is None or age_ms < min_age:
            return failed(
                job,
                ErrorKind.NOT_CACHED,
                f"No cached copy at least {min_age} ms old is available "
                "(minAge), so the page was not fetched.",
            )
    elif age_ms is None or age_ms > max_age:
        return None
    assert state is not None and cached_at is not None
    metadata = {**state.metadata, **base_metadata(job)}
    if "fetchedWith" in state.metadata:  # how the cached copy was fetched
        metadata.pop("fetchedWithReason", None)
        for key in ("fetchedWith", "fetchedWithReason"):
            if key in state.metadata:
                metadata[key] = state.metadata[key]
    metadata |= {
        "creditsUsed": job.credits,
        "cacheState": "hit",
        "cachedAt": cached_at.isoformat().replace("+00:00", "Z"),
    }
    return Outcome(
        PageResult.Status.SAME,
        metadata,
        status_code=metadata.get("statusCode"),
        cache_hit=True,
    )


# --- After a fetch ---------------------------------------------------------------


def judge(
    job: PageJob, fetched: FetchResult | BaseException, state: PageState | None
) -> Outcome:
    """A fetched page's outcome; `pending` set when the baseline's text is
    needed to decide (see reconcile()). Never raises: a crash in the analysis
    fails this page, with a reason, and nothing else."""
    if isinstance(fetched, FetchError):
        return failed(job, fetched.kind, fetched.message)
    if isinstance(fetched, BaseException):
        logger.error("Fetching %s crashed", job.url, exc_info=fetched)
        return failed(
            job,
            ErrorKind.INTERNAL,
            "The page could not be fetched because of an internal error.",
        )
    try:
        outcome = _judge_response(job, fetched, state)
        if isinstance(fetched, BrowserResult):
            _add_browser_output(outcome, fetched)
        if job.follow and 200 <= fetched.status_code < 300:
            content_type = fetched.headers.get("content-type", "")
            outcome.links = page_links(fetched.content, content_type, fetched.final_url)
        return outcome
    except Exception:
        logger.exception("Analysing %s crashed", job.url)
        return failed(
            job,
            ErrorKind.INTERNAL,
            "The page could not be analysed because of an internal error.",
            status_code=fetched.status_code,
        )


def _add_browser_output(outcome: Outcome, fetched: BrowserResult) -> None:
    """The screenshot format and the actions' outputs, as Firecrawl names
    them; captures by content hash (links are signed when results are read)."""
    metadata = outcome.metadata
    if fetched.screenshot is not None:
        metadata["screenshot"] = fetched.screenshot.digest
        outcome.captures.append(fetched.screenshot)
    done = fetched.actions
    if done:
        metadata["actions"] = {
            "screenshots": [shot.digest for shot in done.screenshots],
            "scrapes": done.scrapes,
            "javascriptReturns": done.javascript_returns,
            "pdfs": [shot.digest for shot in done.pdfs],
        }
        outcome.captures += done.screenshots + done.pdfs
    if fetched.refused:
        metadata["blockedRequests"] = fetched.refused[:BLOCKED_LISTED]


def _judge_response(
    job: PageJob, fetched: FetchResult, state: PageState | None
) -> Outcome:
    content_type = fetched.headers.get("content-type", "")
    code = fetched.status_code
    metadata = base_metadata(job) | {"url": fetched.final_url, "statusCode": code}
    if content_type:
        metadata["contentType"] = content_type
    baseline = state if state is not None and state.has_baseline else None
    if code == NOT_MODIFIED and baseline is not None and baseline.body_hash:
        return _unchanged(job, baseline, metadata, body_hash=baseline.body_hash)
    if code in PageResult.GONE_STATUS_CODES:
        if baseline is not None:
            return Outcome(PageResult.Status.REMOVED, metadata, status_code=code)
        if state is not None and state.is_removed:
            return _still_gone(job, metadata, code)
    if code >= 400 or code == NOT_MODIFIED:
        kind = ErrorKind.HTTP_5XX if code >= 500 else ErrorKind.HTTP_4XX
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=code,
            error=f"The page answered HTTP {code}.",
            error_kind=kind,
        )
    outcome = _extracted(job, fetched, baseline, metadata, content_type)
    outcome.etag = fetched.headers.get("etag", "")[:512]
    outcome.last_modified = fetched.headers.get("last-modified", "")[:64]
    return outcome


def _still_gone(job: PageJob, metadata: dict[str, Any], code: int) -> Outcome:
    """A page an earlier check reported removed, answering 404/410 again.

    Its state has not changed since it was reported, so it is `same`: an
    `error` on every check would mail the team and fail the check for as
    long as the page stays gone. Nothing of the answer is kept (no content,
    no validators): the state stays removed, so the next good fetch is new.
    """
    # The page was fetched, so it costs what any fetched page costs: only a
    # `removed` page is free, as Firecrawl bills it. As a `same` page it is free
    # when unchangedPagesFree applies (Check.credits_for).
    metadata["creditsUsed"] = job.credits
    return Outcome(PageResult.Status.SAME, metadata, status_code=code)


def _unchanged(
    job: PageJob, baseline: PageState, metadata: dict[str, Any], body_hash: str
) -> Outcome:
    """The baseline's very content: its metadata (title...) replayed."""
    kept = {k: v for k, v in baseline.metadata.items() if k not in metadata}
    shown = kept | metadata | {"creditsUsed": job.credits}
    if shown["statusCode"] == NOT_MODIFIED:
        # 304 answers our conditional request, not the page, which still
        # answers as it did (baselines stored before this was kept say 304).
        code = baseline.metadata.get("statusCode")
        shown["statusCode"] = code if code and code != NOT_MODIFIED else 200
    return Outcome(
        PageResult.Status.SAME,
        shown,
        status_code=shown["statusCode"],
        normalized_hash=baseline.normalized_hash,
        snapshot=(baseline.snapshot_hash, b"", 0, ""),
        body_hash=body_hash,
    )


def _extracted(
    job: PageJob,
    fetched: FetchResult,
    baseline: PageState | None,
    metadata: dict[str, Any],
    content_type: str,
) -> Outcome:
    digest = body_hash(fetched)
    same_options = baseline is not None and baseline.options_hash == options_hash(
        job.options
    )
    if baseline is not None and same_options and digest == baseline.body_hash:
        return _unchanged(job, baseline, metadata, body_hash=digest)
    try:
        page = extract(
            fetched.content,
            content_type=content_type,
            url=fetched.final_url,
            options=job.options,
        )
    except ExtractionError as exc:
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=fetched.status_code,
            error=exc.message,
            error_kind=ErrorKind.UNREADABLE,
        )
    page_metadata = {k: v for k, v in page.metadata.items() if v is not None}
    page_metadata.setdefault("title", None)
    outcome = Outcome(
        PageResult.Status.NEW,
        page_metadata | metadata | {"creditsUsed": job.credits},
        status_code=fetched.status_code,
        body_hash=digest,
    )
    source, source_format = page.source, page.source_format
    if ai_formats.wants(job.options).model_formats:
        outcome.source = (source_format, source)
    if baseline is None:
        outcome.snapshot = pack_snapshot(source, source_format)
        return outcome
    outcome.status = PageResult.Status.SAME  # unless the text says otherwise
    if snapshot_hash(source, source_format) == baseline.snapshot_hash:
        outcome.normalized_hash = baseline.normalized_hash
        outcome.snapshot = (baseline.snapshot_hash, b"", 0, "")
        return outcome
    markdown = strip_noise(markdown_of(source_format, source), job.ignore_lines)
    digest_text = content_hash(markdown)
    if baseline.normalized_hash and digest_text == baseline.normalized_hash:
        # Markup changed, text did not: the baseline stays (replaced once when
        # it was stored in an older format).
        _keep_baseline(outcome, baseline, source, source_format, digest_text)
        return outcome
    outcome.normalized_hash = digest_text
    outcome.pending = (source_format, source, markdown)
    if outcome.source is not None:
        outcome.text = markdown
    return outcome


def _keep_baseline(
    outcome: Outcome,
    baseline: PageState,
    source: str,
    source_format: str,
    digest_text: str,
) -> None:
    outcome.normalized_hash = digest_text
    if baseline.snapshot_format == source_format:
        outcome.snapshot = (baseline.snapshot_hash, b"", 0, "")
    else:
        outcome.snapshot = pack_snapshot(source, source_format)


def reconcile(
    outcome: Outcome,
    baseline: PageState,
    previous: tuple[bytes, str] | None,
    ignore_lines: Sequence[str] = (),
) -> None:
    """Finish a pending outcome with the baseline's stored (data, format):
    same when the normalised Markdown is, changed (with its diff) otherwise.
    An unreadable baseline reports the page changed in full. The monitor's
    noise rule (`ignore_lines`) applies to the baseline as to the page."""
    assert outcome.pending is not None
    source_format, source, after = outcome.pending
    outcome.pending = None
    before = stored = ""
    if previous is not None:
        try:
            stored = unpack(previous[0])
            before = strip_noise(markdown_of(previous[1], stored), ignore_lines)
        except (ExtractionError, ValueError):
            before = ""
    before_hash, digest, diff = compare_texts(before, after)
    if before_hash == digest:
        _keep_baseline(outcome, baseline, source, source_format, digest)
        return
    outcome.status = PageResult.Status.CHANGED
    outcome.normalized_hash = digest
    outcome.diff = diff
    outcome.diff_reference = diff_reference(stored, source)
    outcome.snapshot = pack_snapshot(source, source_format)
