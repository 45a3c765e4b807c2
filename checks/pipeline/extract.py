"""The extract stage: a page's response -> its outcome, as far as the
baseline's hashes can decide it, as Firecrawl does.

* first good fetch, or good again after `removed` -> new
* the server says 304, or the body is byte for byte the baseline's (same
  options) -> same, without extracting anything
* the same source, or the same normalised Markdown, as the baseline -> same
* other text -> pending: the compare stage reads the baseline's text and
  says same or changed (with a diff)
* an empty body (or a 204) while the baseline is present  -> error; the
  baseline is kept, so a blank moment is not the page removed and back
* 404/410 while the baseline is present                   -> removed
* 404/410 again after `removed`                           -> same: nothing
  changed since the page was reported gone, so no error, no e-mail; it stays
  removed, and its next good fetch is new again
* fetch or extraction failure, any other 4xx/5xx          -> error; the baseline
  is kept, so the next good fetch diffs against the last good content.
* a page that may be the site's "not found" page answered with 200 carries
  its text for checks.pipeline.not_found to confirm or clear: a page never
  seen when its title, first heading or first lines say so, a page whose
  text changed or that was reported removed by _may_be_not_found; no other
  page pays for it.

All of it is plain CPU work on data in memory, run inline as each page
arrives (checks.pipeline.batch); nothing here reads the database. A PDF is
the exception: its scanned pages may be read with OCR, seconds each, so the
batch extracts it in a thread (reads_slowly).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any
from urllib.parse import urlsplit

from django.utils import timezone

from checks.ai import formats as ai_formats
from checks.browser.result import BrowserResult
from checks.content import (
    SOURCE_HTML,
    Extracted,
    ExtractionError,
    OutOfTimeError,
    content_hash,
    extract,
    markdown_of,
    pack_snapshot,
    page_links,
    snapshot_hash,
    strip_noise,
)
from checks.content.challenge import is_challenge
from checks.content.not_found import first_heading, first_lines, looks_not_found
from checks.content.ocr import available as ocr_available
from checks.content.sniff import body_kind, media_type_of
from checks.errors import ErrorKind, http_error_text
from checks.fetch import FetchError, FetchResult
from checks.jobs import PageJob
from checks.models import PageResult, PageState
from checks.pipeline.outcome import (
    Content,
    Outcome,
    PageText,
    Pending,
    base_metadata,
    failed,
    options_hash,
    read_by_another_engine,
)

logger = logging.getLogger(__name__)

NOT_MODIFIED = 304
# Refused browser requests listed in a page's metadata, at most.
BLOCKED_LISTED = 20

Fetched = FetchResult | BaseException


def extract_page(job: PageJob, fetched: Fetched, state: PageState | None) -> Outcome:
    """A fetched page's outcome; `pending` set when the baseline's text is
    needed to decide (the compare stage). Never raises: a crash in the
    analysis fails this page, with a reason, and nothing else."""
    if isinstance(fetched, FetchError):
        answered: dict[str, Any] = {}
        if fetched.status_code is not None:
            answered["statusCode"] = fetched.status_code
        if fetched.content_type:
            answered["contentType"] = fetched.content_type
        return failed(
            job,
            fetched.kind,
            fetched.message,
            metadata=answered,
            status_code=fetched.status_code,
        )
    if isinstance(fetched, BaseException):
        logger.error("Fetching %s crashed", job.url, exc_info=fetched)
        return failed(
            job,
            ErrorKind.INTERNAL,
            "The page could not be fetched because of an internal error.",
        )
    try:
        outcome = _read_response(job, fetched, state)
        if isinstance(fetched, BrowserResult):
            _add_browser_output(outcome, fetched)
        if job.follow and 200 <= fetched.status_code < 300:
            content_type = fetched.headers.get("content-type", "")
            outcome.links = page_links(
                fetched.content,
                content_type,
                fetched.final_url,
                guess=fetched.guessed_encoding,
            )
        return outcome
    except Exception:
        logger.exception("Analysing %s crashed", job.url)
        return failed(
            job,
            ErrorKind.INTERNAL,
            "The page could not be analysed because of an internal error.",
            status_code=fetched.status_code,
        )


def reads_slowly(fetched: Fetched) -> bool:
    """Whether extracting this answer may wait seconds on the OCR engine:
    a PDF, when there is one."""
    if not isinstance(fetched, FetchResult) or fetched.status_code >= 300:
        return False
    media_type = media_type_of(fetched.headers.get("content-type", ""))
    return body_kind(fetched.content, media_type) == "pdf" and ocr_available()


# Bumped whenever the same bytes may read as other text (encodings, JSON
# layout...): a baseline a page's very bytes gave under an older reading is
# then read again once, and its new reading kept without reporting a change,
# so the next real change does not show the reading's own fixes as changed
# lines. Reading 1 is the hash of releases that had no reading number.
# Reading 5 reads a PDF's pages that are pictures with OCR (when an engine
# is installed): a text PDF with a scanned page gains that page's words.
# Reading 6 reads unlabelled pages in Greek, Hebrew, Arabic, Thai, Central
# European, Turkish and Baltic encodings in their own letters.
# What a PDF's pictures were read with (the OCR engine's version and its
# languages) is not a reading number: it is kept in the page's metadata
# (ocrEngine), and a baseline read otherwise is read again, as quietly.
READING = 6


def body_digest(fetched: FetchResult) -> Any:
    """The hash of what a page answered (address, label, bytes), before its
    reading is added: one pass over the bytes serves every reading's hash."""
    digest = hashlib.sha256()
    for part in (fetched.final_url, fetched.headers.get("content-type", "")):
        digest.update(part.encode() + b"\0")
    digest.update(fetched.content)
    return digest


def body_hash(digest: Any, reading: int = READING) -> str:
    """`digest` (body_digest) under `reading`: the reading comes last, so the
    bytes are hashed once for all readings. Reading 1 is the plain hash."""
    if reading > 1:
        digest = digest.copy()
        digest.update(f"\0reading {reading}".encode())
    return digest.hexdigest()


def _older_readings(digest: Any) -> set[str]:
    return {body_hash(digest, reading) for reading in range(1, READING)}


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


def _read_response(
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
    if is_challenge(code, fetched.headers, fetched.content):
        # Its text is the protection's, not the page's: not a change, and
        # the baseline stays.
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=code,
            error=f"The site answered HTTP {code} with a bot-protection challenge.",
            error_kind=ErrorKind.CHALLENGE,
        )
    if code >= 400 or code == NOT_MODIFIED:
        kind = ErrorKind.HTTP_5XX if code >= 500 else ErrorKind.HTTP_4XX
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=code,
            error=http_error_text(
                code, fetched.headers.get("retry-after"), timezone.now()
            ),
            error_kind=kind,
        )
    removed = state if state is not None and state.is_removed else None
    outcome = _extracted(job, fetched, baseline, removed, metadata)
    if outcome.content is not None:
        outcome.content.etag = fetched.headers.get("etag", "")[:512]
        outcome.content.last_modified = fetched.headers.get("last-modified", "")[:64]
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
        content=Content(
            (baseline.snapshot_hash, b"", 0, ""), baseline.normalized_hash, body_hash
        ),
    )


def read_page(job: PageJob, fetched: FetchResult) -> Extracted:
    """A fetched page's extracted content under the page's options (raises
    ExtractionError): the page's and its made-up address's alike
    (checks.pipeline.not_found)."""
    return extract(
        fetched.content,
        content_type=fetched.headers.get("content-type", ""),
        url=fetched.final_url,
        options=job.options,
        guess=fetched.guessed_encoding,
    )


def text_of(job: PageJob, source_format: str, source: str) -> str:
    """An extracted page's Markdown as it is compared: without the monitor's
    lines to ignore."""
    return strip_noise(markdown_of(source_format, source), job.ignore_lines)


def _extracted(
    job: PageJob,
    fetched: FetchResult,
    baseline: PageState | None,
    removed: PageState | None,
    metadata: dict[str, Any],
) -> Outcome:
    answered = body_digest(fetched)
    digest = body_hash(answered)
    same_options = baseline is not None and baseline.options_hash == options_hash(
        job.options
    )
    same_body = baseline is not None and same_options and digest == baseline.body_hash
    if same_body and not read_by_another_engine(baseline):
        return _unchanged(job, baseline, metadata, body_hash=digest)
    if baseline is not None and (not fetched.content or fetched.content.isspace()):
        # A blank answer (a deploy, an overloaded backend, a 204) is no new
        # version of a page that had content: as a change it would report
        # the whole page removed, and then added back at the next check.
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=fetched.status_code,
            error=(
                f"The page answered HTTP {fetched.status_code} with nothing in it, "
                "so there was nothing to compare; its last content is kept."
            ),
            error_kind=ErrorKind.EMPTY,
        )
    try:
        page = read_page(job, fetched)
    except OutOfTimeError as exc:
        # Not a change, nor a reading to keep: the baseline stays as it was
        # (the body's hash too), so the next check reads the PDF again.
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=fetched.status_code,
            error=exc.message,
            error_kind=ErrorKind.OCR_OUT_OF_TIME,
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
    content = Content(body_hash=digest)
    outcome = Outcome(
        PageResult.Status.NEW,
        page_metadata | metadata | {"creditsUsed": job.credits},
        status_code=fetched.status_code,
        content=content,
    )
    source, source_format = page.source, page.source_format
    if ai_formats.wants(job.options).model_formats:
        outcome.page_text = PageText(source_format, source)
    if baseline is None:
        content.snapshot = pack_snapshot(source, source_format)
        if removed is not None:
            # Back, or still the site's not-found page: told as a page whose
            # text changed is, against the content it had before it went.
            markdown = text_of(job, source_format, source)
            if _may_be_not_found(job, outcome, removed, page, markdown):
                outcome.not_found = markdown
            return outcome
        # Never seen: its title, first heading and first lines are read from
        # its source, so a first check does not turn every page into Markdown.
        html = source_format == SOURCE_HTML
        heading = first_heading(source, html=html)
        lines = first_lines(source, html=html)
        if looks_not_found(outcome.metadata["title"], heading, lines, new=True):
            outcome.not_found = text_of(job, source_format, source)
        return outcome
    outcome.status = PageResult.Status.SAME  # unless the text says otherwise
    if snapshot_hash(source, source_format) == baseline.snapshot_hash:
        content.normalized_hash = baseline.normalized_hash
        content.snapshot = (baseline.snapshot_hash, b"", 0, "")
        return outcome
    markdown = text_of(job, source_format, source)
    digest_text = content_hash(markdown)
    if baseline.normalized_hash and digest_text == baseline.normalized_hash:
        # Markup changed, text did not: the baseline stays (replaced once when
        # it was stored in an older format).
        outcome.keep_baseline(baseline, source, source_format, digest_text)
        return outcome
    if same_body and not _read_as_much(page, baseline):
        # Another engine's reading that missed pages the baseline's engine
        # read (one failed): no change of the page, nor a reading to keep.
        return _unchanged(job, baseline, metadata, body_hash=digest)
    if same_body or (same_options and baseline.body_hash in _older_readings(answered)):
        # The very bytes of the baseline, whose text an older release read
        # otherwise (a charset it got wrong), or another OCR engine or other
        # languages that read every page the baseline's did: not a change of
        # the page, so the new reading becomes the baseline quietly.
        content.normalized_hash = digest_text
        content.snapshot = pack_snapshot(source, source_format)
        return outcome
    content.normalized_hash = digest_text
    outcome.pending = Pending(source_format, source, markdown)
    if _may_be_not_found(job, outcome, baseline, page, markdown):
        outcome.not_found = markdown
    if outcome.page_text is not None:
        outcome.page_text.markdown = markdown
    return outcome


def _read_as_much(page: Extracted, baseline: PageState) -> bool:
    """Whether OCR read every page of the PDF it read for the baseline."""
    had = set(baseline.metadata.get("ocrPages") or ())
    return had <= set(page.metadata.get("ocrPages") or ())


# A page that had content and now may be the site's "not found" page has
# lost at least this share of it.
NOT_FOUND_DROP = 0.5


def _may_be_not_found(
    job: PageJob,
    outcome: Outcome,
    kept: PageState,
    page: Extracted,
    markdown: str,
) -> bool:
    """Whether a page whose text changed from its baseline, or that comes
    back after it was reported removed (`kept`: its last content), may be
    the site's "not found" page: it says so at its top and lost most of its
    content, or a deep address that landed elsewhere now lands on the site's
    home page (as any unknown address of many sites does); one that always
    landed there is the home page. Only a suspicion: the made-up address
    confirms it."""
    if _landed_home(job, outcome, kept):
        return True
    title = outcome.metadata.get("title")
    if not looks_not_found(title, first_heading(markdown, html=False), markdown):
        return False
    size = getattr(kept, "snapshot_size", None)
    if not size or kept.snapshot_format != page.source_format:
        return True  # nothing to measure the drop by: the probe decides
    return len(page.source.encode()) <= size * NOT_FOUND_DROP


def _landed_home(job: PageJob, outcome: Outcome, kept: PageState) -> bool:
    """Whether a deep address whose kept content was not the home page
    (its own final address) now lands on the home page."""
    landed = urlsplit(str(outcome.metadata.get("url") or job.url)).path or "/"
    was = urlsplit(str(kept.metadata.get("url") or job.url)).path or "/"
    deep = (urlsplit(job.url).path or "/") != "/"
    return landed == "/" and was != "/" and deep
