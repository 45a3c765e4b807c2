"""A crawl's state in the database while its check runs.

    plan:   the start URL and the sitemap's pages, admitted at depth 0
    copies: a page that names another page of the crawl as its canonical
            address is not recorded; that address is admitted instead and
            recorded from its own fetch (see canonical, copies)
    admit:  the links of each fetched page (scoped by checks.crawl.scope)
            become new batches, once per page, up to the crawl's limit;
            near it, pages the target had come first and the others wait
            until no batch is open (checks.crawl.waiting), then go by depth
            and address, so a site larger than the limit is the same pages
            on every check
    close:  when the check's last batch is done, a complete crawl records as
            `removed` every active page it did not find again

Admitting happens in its own transaction *before* the pages that brought the
links are recorded: a worker dying in between leaves those pages unrecorded,
so they are fetched again and their links admitted again (a no-op).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Count, F

from checks import shared_clock
from checks.browser.options import browser_options
from checks.content.sniff import is_document_type, media_type_of
from checks.crawl import known
from checks.crawl.canonical import declared_canonical
from checks.crawl.discovery import DISALLOW_ALL, robots_of
from checks.crawl.kept_out import kept_out
from checks.crawl.models import Crawl, CrawlPage
from checks.crawl.scope import Link, Scope
from checks.errors import ErrorKind, error_words
from checks.fetch import FetchResult, OutboundClient
from checks.jobs import PageJob
from checks.models import Check, CheckBatch, PageResult, PageState
from checks.pipeline.outcome import Item, Outcome
from monitors.models import Target

logger = logging.getLogger(__name__)

LIMIT_REASON = "The crawl stopped at its limit of {limit} pages."
# CRAWL_DEADLINE_SECONDS, named in words: staff read this on the check page.
DEADLINE_REASON = (
    "The crawl stopped after {minutes} minutes, the longest a crawl may run here."
)
# Why, in the words a failed page gets (checks.errors.error_words).
START_FAILED_REASON = "The start page could not be fetched. {why}"
# The URL last: the reason is cut at 255 characters.
LINKS_LOST_REASON = (
    "A page it follows could not be read this time, so pages found only "
    "through it may be missing: {url}"
)
# Failures that may pass, of a page whose links the crawl follows: the pages
# below it cannot be told from removed ones this time. A page that is gone
# (404, 410) or never readable (a download, an address the policy blocks)
# hides nothing it would show next time, so it does not hold removals back.
PASSING_FAILURES = frozenset(
    {
        ErrorKind.DNS,
        ErrorKind.REFUSED,
        ErrorKind.CONNECT,
        ErrorKind.TIMEOUT,
        ErrorKind.TLS,
        ErrorKind.PROTOCOL,
        ErrorKind.BROWSER,
        ErrorKind.HTTP_5XX,
        ErrorKind.CHALLENGE,  # the site's protection, this time
        ErrorKind.EMPTY,  # a blank answer from a page that had content
        ErrorKind.OCR_OUT_OF_TIME,  # a PDF's scans read at a check with time
        ErrorKind.INTERNAL,
    }
)


def may_pass(kind: ErrorKind | None, status_code: int | None) -> bool:
    """Whether a failure may pass by next time (PASSING_FAILURES, a 5xx, a
    429), so what it hid cannot be told from what was removed."""
    return kind in PASSING_FAILURES or status_code == HTTPStatus.TOO_MANY_REQUESTS


def page_limit(target: Target) -> int:
    return target.page_budget()


def scope_of(target: Target, row: Crawl) -> Scope:
    """The crawl's rules, as its check planned them."""
    start = row.start_url or target.url
    return Scope(start, target.crawl_options or {}, row.robots)


@dataclass
class _Crawl:
    row: Crawl
    target: Target
    scope: Scope


class Frontier:
    """The crawls of one check, as one batch of it sees them."""

    def __init__(self, check: Check) -> None:
        self.check = check
        targets = {t.id: t for t in check.monitor.targets.all()}
        self.crawls: dict[uuid.UUID, _Crawl] = {}
        # Pages redirects led to, and links that are not pages (crawl row,
        # key, where it led), for the next admit (see redirected): it
        # writes both under the one lock of the check it takes anyway.
        self.led_to: dict[uuid.UUID, list[Link]] = {}
        self.not_pages: list[tuple[Crawl, str, str]] = []
        for row in Crawl.objects.filter(check_run=check):
            target = targets.get(row.target_id)
            if target is not None:
                self.crawls[row.target_id] = _Crawl(row, target, scope_of(target, row))

    def scope(self, job: PageJob) -> Scope | None:
        crawl = self.crawls.get(job.target_id)
        return crawl.scope if crawl is not None else None

    def out_of_scope(self, job: PageJob) -> Callable[[str], bool] | None:
        """Where this page's redirects are not followed: to an address the
        crawl would not take as a page at its depth (another site, a path
        outside its rules, one robots.txt disallows), so nothing out of the
        crawl is ever fetched. None for the start page, which goes where it
        leads, and for pages not of a crawl."""
        scope = self.scope(job)
        if scope is None or job.depth == 0 and job.url == scope.start:
            return None
        return lambda url: scope.admit(url, job.depth) is None

    async def learn_robots(
        self, job: PageJob, outcome: Outcome, client: OutboundClient
    ) -> None:
        """Fetch robots.txt of the hosts this page links to that the crawl
        has not met yet (subdomains, one-hop external sites), as the page
        was fetched (its TLS verification, its timeout)."""
        scope = self.scope(job)
        if scope is None or not job.follow:
            return
        # The canonical address's too: the crawl takes it only as it would
        # take a link (checks.crawl.frontier.copies).
        named = [outcome.canonical] if outcome.canonical else []
        origins = {Scope.host_of(url) for url in [*outcome.links, *named]}
        for origin in origins - set(scope.robots):
            if scope.knows_robots(origin):
                continue
            scope.claim_robots(origin)
            try:
                text = await robots_of(
                    origin, client, verify=job.verify_tls, timeout=job.timeout
                )
            except Exception:
                # A host left claimed would have no rules, so open to the
                # rest of the crawl: kept out, as a robots.txt that cannot
                # be read keeps it (checks.crawl.discovery).
                logger.exception("Reading robots.txt of %s failed", origin)
                text = DISALLOW_ALL
            scope.remember_robots(origin, text)

    def canonical(self, job: PageJob, fetched: object) -> str | None:
        """The canonical address this page names (checks.crawl.canonical),
        when it may be a copy of another page (see copies): a crawl page
        answered 2xx under its own address, not the start page (the user's
        own), with deduplicateSimilarURLs on (the site's own word on which
        addresses are one page). Whether the crawl takes the address is
        decided once its robots.txt is known (learn_robots, then copies)."""
        crawl = self.crawls.get(job.target_id)
        if crawl is None or not job.record or not isinstance(fetched, FetchResult):
            return None
        scope = crawl.scope
        if not scope.similar or not 200 <= fetched.status_code < 300:
            return None
        if job.depth == 0 and job.url == scope.start:
            return None
        if not scope.is_internal(job.url) or _moved(scope, job.url, fetched.final_url):
            return None
        declared = declared_canonical(fetched)
        return declared if declared and scope.is_internal(declared) else None

    def copies(self, items: Sequence[Item]) -> list[Item]:
        """These pages, but for copies: a page that names another page of
        the crawl as its canonical address (see canonical) is not recorded
        nor counted against the limit; the address it names is admitted as
        a link would be (a no-op when the crawl has it), and recorded from
        its own fetch, so what a page shows never depends on which address
        answered first. Its links are followed all the same. A copy the
        target had is `removed` once, under its own address, when the
        crawl closes complete (removed_items): not before, as the address
        it names may yet turn out to be no page (see _uncopy).

        A page records itself when the address it names is no page of the
        crawl (it redirected, answered a download or nothing), or no page
        this time (removed, moved away, still gone, an error), or leads
        back to it through copies already met (a cycle: which of its pages
        is recorded then depends on which answered first). The copy is
        marked on its frontier row (CrawlPage.copy_of), so a batch that
        runs again does the same."""
        named: dict[int, tuple[_Crawl, str, Link]] = {}
        for n, (job, outcome, _state) in enumerate(items):
            crawl = self.crawls.get(job.target_id)
            if crawl is None or outcome.canonical is None or not job.record:
                continue
            if not _live(outcome):
                continue  # an error or a "not found" page is nobody's copy
            own = crawl.scope.key(job.url)
            link = crawl.scope.admit(outcome.canonical, job.depth)
            if link is not None and link.follow and link.key != own:
                named[n] = (crawl, own, link)
        if not named:
            return list(items)
        kept = list(items)
        with transaction.atomic():
            check = Check.objects.select_for_update().get(pk=self.check.pk)
            rows = _frontier_rows(
                {crawl.row.pk: crawl for crawl, _, _ in named.values()},
                {(crawl.row.pk, own) for crawl, own, _ in named.values()}
                | {(crawl.row.pk, link.key) for crawl, _, link in named.values()},
            )
            gone: dict[int, int] = {}
            for n, (crawl, own, link) in named.items():
                job, outcome, state = items[n]
                mine = rows.get((crawl.row.pk, own))
                if mine is None:
                    continue
                if not mine.copy_of:
                    if not _copy(crawl, own, link, rows):
                        continue
                    mine.copy_of = link.url
                    CrawlPage.objects.filter(pk=mine.pk).update(copy_of=link.url)
                    gone[crawl.row.pk] = gone.get(crawl.row.pk, 0) + 1
                self.led_to.setdefault(job.target_id, []).append(link)
                kept[n] = Item(dataclasses.replace(job, record=False), outcome, state)
            for row_pk, count in gone.items():
                Crawl.objects.filter(pk=row_pk).update(found=F("found") - count)
            if gone:
                Check.objects.filter(pk=check.pk).update(
                    pages_total=F("pages_total") - sum(gone.values())
                )
        return kept

    def redirected(self, items: Sequence[Item]) -> list[Item]:
        """These pages, but for those a redirect took elsewhere, that
        answered with a download, or that lead to no page and never did
        (see _leads_nowhere): such a link is not a page of the crawl.
        The page a redirect led to is, when the crawl's rules let it in
        (admit adds it, at the link's depth, so each page is recorded once
        and under its own address, whichever link led to it first); a
        redirect out of the crawl (another site, an excluded path) leads
        nowhere. A download (an image, an archive: see _download) is
        skipped as a link to a file by its extension is, only known later.
        A link that was a page last time is `removed` once. The start page
        is the user's own: it stays what it is."""
        kept: list[Item] = []
        for item in items:
            job, outcome, state = item
            crawl = self.crawls.get(job.target_id)
            to = _redirect(crawl.scope, job, outcome) if crawl else None
            if (
                crawl is not None
                and to is None
                and (
                    _download(crawl.scope, job, outcome)
                    or _leads_nowhere(crawl.scope, job, outcome, state)
                )
            ):
                to = ""  # leads to no page
            if crawl is None or to is None:
                kept.append(item)
                continue
            link = crawl.scope.admit(to, job.depth) if to else None
            if link is not None:
                self.led_to.setdefault(job.target_id, []).append(link)
            if state is not None and state.has_baseline:
                kept.append(Item(job, moved_away(state), state))
                continue
            kept.append(Item(dataclasses.replace(job, record=False), outcome, state))
            self.not_pages.append((crawl.row, crawl.scope.key(job.url), to))
        return kept

    def admit(self, items: Sequence[Item]) -> list[CheckBatch]:
        """Admit the links these pages brought, and the pages their
        redirects led to, after taking the links that are not pages out of
        the counts (see redirected); the new batches (committed)."""
        found: dict[uuid.UUID, list[Link]] = {}
        for target_id, links in self.led_to.items():
            found.setdefault(target_id, []).extend(links)
        self.led_to = {}
        not_pages, self.not_pages = self.not_pages, []
        no_pages = [(row, key) for row, key, _to in not_pages]
        gone: list[tuple[Crawl, str]] = []
        incomplete: dict[uuid.UUID, str] = {}
        for job, outcome, _state in items:
            crawl = self.crawls.get(job.target_id)
            if crawl is None:
                continue
            if job.record and not _live(outcome):
                gone.append((crawl.row, crawl.scope.key(job.url)))
            if job.depth == 0 and job.url == crawl.scope.start and outcome.error:
                why = error_words(
                    outcome.error_kind, outcome.status_code, outcome.error
                )
                incomplete[job.target_id] = START_FAILED_REASON.format(why=why)
            elif job.follow and _links_lost(outcome):
                reason = LINKS_LOST_REASON.format(url=job.url)
                incomplete.setdefault(job.target_id, reason)
            if job.follow and outcome.links:
                links = crawl.scope.links(outcome.links, job.depth + 1)
                found.setdefault(job.target_id, []).extend(links)
        found = {
            target_id: fresh
            for target_id, links in found.items()
            if (fresh := _unknown(self.crawls[target_id].row.pk, links))
        }
        if not found and not incomplete and not not_pages and not gone:
            return []
        with transaction.atomic():
            check = Check.objects.select_for_update().get(pk=self.check.pk)
            # First, so the room a crawl's limit leaves counts them out.
            _not_pages(check, not_pages)
            _no_page(gone)
            batches: list[CheckBatch] = self._uncopy(check, no_pages + gone)
            for target_id, reason in incomplete.items():
                truncate(self.crawls[target_id].row, reason)
            for target_id, links in found.items():
                batches += self._admit(check, self.crawls[target_id], links)
            return batches

    def _uncopy(
        self, check: Check, no_pages: Sequence[tuple[Crawl, str]]
    ) -> list[CheckBatch]:
        """Copies of addresses that turned out to be no page (crawl row,
        key): a copy met before the address it named redirected (back to
        it, or away), answered nothing, or answered as no page this time
        (removed, still gone, an error). Each is a page again, fetched once
        more to record itself (then the address it names is no page: see
        copies). The caller holds the check's row locked."""
        batches: list[CheckBatch] = []
        by_crawl: dict[int, list[str]] = {}
        for row, key in no_pages:
            by_crawl.setdefault(row.pk, []).append(key)
        for crawl in self.crawls.values():
            keys = set(by_crawl.get(crawl.row.pk, ()))
            if not keys:
                continue
            copies = CrawlPage.objects.filter(crawl_id=crawl.row.pk).exclude(copy_of="")
            links = [
                Link(page.url, page.key, page.depth, crawl.scope.is_internal(page.url))
                for page in copies
                if crawl.scope.key(page.copy_of) in keys
            ]
            if links:
                CrawlPage.objects.filter(
                    crawl_id=crawl.row.pk, key__in=[link.key for link in links]
                ).update(copy_of="")
                batches += schedule(check, crawl.row, crawl.target, links)
        return batches

    def _admit(
        self, check: Check, crawl: _Crawl, links: list[Link]
    ) -> list[CheckBatch]:
        row = Crawl.objects.get(pk=crawl.row.pk)
        fresh = _unknown(row.pk, links)  # again, now that the check is ours
        if not fresh:
            return []
        if past_deadline(check, row):
            return []
        limit = page_limit(crawl.target)
        if row.had:
            had, new = known.respelled(
                check.monitor_id, crawl.target.id, crawl.scope, fresh
            )
        else:
            had, new = [], fresh
        room = max(limit - row.found, 0)
        taken = had[:room]
        if len(taken) < len(had):
            truncate(row, LIMIT_REASON.format(limit=limit))
        # Pages the target did not have wait for the end of the check when
        # the pages it had might not leave them room (checks.crawl.waiting).
        if row.found + len(taken) + len(new) + row.had > limit:
            _wait(row, new)
        else:
            taken += new
        return register(check, row, crawl.target, taken)


# What a page that answered is recorded as: a copy is one of these.
_PAGE_STATUSES = frozenset(
    {PageResult.Status.NEW, PageResult.Status.SAME, PageResult.Status.CHANGED}
)


def _live(outcome: Outcome) -> bool:
    """Whether a page answered as a page this time: not removed, still gone
    (a 404 again, the site's "not found" page again) nor failed."""
    if outcome.status not in _PAGE_STATUSES or outcome.error_kind:
        return False
    gone = outcome.status_code in PageResult.GONE_STATUS_CODES
    return not gone and not outcome.not_found_hash


def _no_page(pages: Sequence[tuple[Crawl, str]]) -> None:
    """Mark these frontier rows (crawl row, key) as no page this time, so a
    page naming one as its canonical address records itself (see copies)."""
    by_crawl: dict[int, set[str]] = {}
    for row, key in pages:
        by_crawl.setdefault(row.pk, set()).add(key)
    for crawl_id, keys in by_crawl.items():
        CrawlPage.objects.filter(crawl_id=crawl_id, key__in=keys).update(no_page=True)


# Copies followed from one to the next, looking for a cycle, at most.
_CHAIN_HOPS = 8


def _frontier_rows(
    crawls: dict[int, _Crawl], todo: set[tuple[int, str]]
) -> dict[tuple[int, str], CrawlPage]:
    """The frontier rows of these (crawl row, key), and of the addresses
    their copies name in turn (up to _CHAIN_HOPS), by (crawl row, key): a
    query a hop, whatever the number of pages."""
    rows: dict[tuple[int, str], CrawlPage] = {}
    asked: set[tuple[int, str]] = set()
    for _ in range(_CHAIN_HOPS):
        todo -= asked
        if not todo:
            break
        asked |= todo
        found = CrawlPage.objects.filter(
            crawl_id__in={pk for pk, _ in todo}, key__in={key for _, key in todo}
        )
        todo = set()
        for row in found:
            rows.setdefault((row.crawl_id, row.key), row)
            if row.copy_of:
                scope = crawls[row.crawl_id].scope
                todo.add((row.crawl_id, scope.key(row.copy_of)))
    return rows


def _copy(
    crawl: _Crawl, own: str, link: Link, rows: dict[tuple[int, str], CrawlPage]
) -> bool:
    """Whether the page at key `own` is a copy of `link`: not when the
    address it names is no page (a link that redirected, a download, a page
    removed or failed this time), nor when the copies it leads through come
    back to the page (a cycle)."""
    scope, seen, key = crawl.scope, {own}, link.key
    row = rows.get((crawl.row.pk, key))
    if row is not None and row.no_page:
        return False
    if row is not None and not row.copy_of and scope.key(row.url) != key:
        return False
    for _ in range(_CHAIN_HOPS):
        if row is None or not row.copy_of:
            return True
        seen.add(key)
        key = scope.key(row.copy_of)
        if key in seen:
            return False
        row = rows.get((crawl.row.pk, key))
    return False


def _wait(row: Crawl, links: Sequence[Link]) -> None:
    CrawlPage.objects.bulk_create(
        [
            CrawlPage(crawl=row, key=k.key, url=k.url, depth=k.depth, waiting=True)
            for k in links
        ]
    )


def past_deadline(check: Check, row: Crawl) -> bool:
    """Whether the crawl ran past CRAWL_DEADLINE_SECONDS (then it says so)."""
    deadline = timedelta(seconds=int(settings.CRAWL_DEADLINE_SECONDS))
    if check.started_at and shared_clock.now() - check.started_at > deadline:
        minutes = round(deadline.total_seconds() / 60)
        truncate(row, DEADLINE_REASON.format(minutes=minutes))
        return True
    return False


def _redirect(scope: Scope, job: PageJob, outcome: Outcome) -> str | None:
    """Where a redirect took this page, as the crawl would fetch it; None
    when it was not redirected to another page (http to https, a trailing
    slash are the same page), failed, or is the start page."""
    stopped = outcome.status_code is not None and 300 <= outcome.status_code < 400
    if not job.record or outcome.status == PageResult.Status.ERROR and not stopped:
        return None
    if job.depth == 0 and job.url == scope.start:
        return None
    final = outcome.metadata.get("url")
    to = scope.fetch_url(final) if isinstance(final, str) else None
    return to if to is not None and _moved(scope, job.url, to) else None


def _moved(scope: Scope, url: str, final: str) -> bool:
    """Whether a fetch of `url` that ended at `final` was taken to another
    page (http to https, a trailing slash, a query it added are the same)."""
    to = scope.fetch_url(final)
    if to is None or scope.key(to) == scope.key(url):
        return False
    return not _adds_to_query(url, to)


def _download(scope: Scope, job: PageJob, outcome: Outcome) -> bool:
    """Whether this link answered with something that is not a page: an
    answer we could not read (or too large to read, with a Content-Type)
    whose Content-Type names no document we read (an image, an archive,
    application/octet-stream). A page we do read that is broken (a damaged
    PDF) or too large is a page that failed; the start page is the user's
    own."""
    if not job.record or job.depth == 0 and job.url == scope.start:
        return False
    content_type = str(outcome.metadata.get("contentType") or "")
    if outcome.error_kind == ErrorKind.TOO_LARGE and not content_type:
        return False  # no answer's type to go by
    if outcome.error_kind not in (ErrorKind.UNREADABLE, ErrorKind.TOO_LARGE):
        return False
    return not is_document_type(media_type_of(content_type))


def _leads_nowhere(
    scope: Scope, job: PageJob, outcome: Outcome, state: PageState | None
) -> bool:
    """Whether this link leads to no page, and never did: it answers 404 or
    410 (or with the site's "not found" page), or redirects in a loop, and
    the target never had a page there. An error on every check would say
    nothing new each time (a sitemap's stale entry, a broken link); a page
    the target had is `removed` when it answers 404, and an error, its last
    content kept, when it loops."""
    if not job.record or job.depth == 0 and job.url == scope.start:
        return False
    if outcome.status != PageResult.Status.ERROR:
        return False
    if state is not None and state.has_baseline:
        return False
    gone = outcome.status_code in PageResult.GONE_STATUS_CODES
    return gone or outcome.error_kind in _LEADS_NOWHERE


# Failures of a link the target never had a page at that say there is none.
_LEADS_NOWHERE = frozenset({ErrorKind.TOO_MANY_REDIRECTS, ErrorKind.NOT_FOUND_PAGE})


def _adds_to_query(url: str, to: str) -> bool:
    """Whether a redirect led to the same path with more in its query (a
    session, a cookie check): the same page, under a new address each
    time, so the address linked to stands for it."""
    before, after = urlsplit(url), urlsplit(to)
    if (before.netloc, before.path) != (after.netloc, after.path):
        return False
    return not set(parse_qsl(after.query)) <= set(parse_qsl(before.query))


def moved_away(state: PageState) -> Outcome:
    """A page the crawl had that is no longer there: `removed`, under the
    title it last had."""
    metadata = {"sourceURL": state.url, "url": state.url, "creditsUsed": 0}
    metadata["title"] = state.metadata.get("title")
    return Outcome(PageResult.Status.REMOVED, metadata, status_code=None)


def _not_pages(check: Check, links: Sequence[tuple[Crawl, str, str]]) -> None:
    """Links that redirected or answered a download are not pages found:
    each (crawl, its key, the address it led to, "" for a download) leaves
    the crawl's count and the check's. Its frontier row keeps its key (so
    the link is not fetched again) and takes the address it led to, which
    makes this happen once, should the batch run again. The caller holds
    the check's row locked (admitting and recording lock it first: locked
    in another order, two workers could wait on each other)."""
    gone = 0
    for row, key, to in links:
        moved = CrawlPage.objects.filter(crawl_id=row.pk, key=key).exclude(url=to)
        if moved.update(url=to):
            Crawl.objects.filter(pk=row.pk).update(found=F("found") - 1)
            gone += 1
    if gone:
        Check.objects.filter(pk=check.pk).update(pages_total=F("pages_total") - gone)


def _links_lost(outcome: Outcome) -> bool:
    """Whether a failure kept this page's links from the crawl this time only."""
    if outcome.status != PageResult.Status.ERROR or outcome.links:
        return False
    return may_pass(outcome.error_kind, outcome.status_code)


def _unknown(crawl_id: int, links: Sequence[Link]) -> list[Link]:
    """The links not in the crawl's frontier yet, once each. A page once
    admitted stays, so the answer read without a lock only shrinks: asked
    first, it spares the check's lock to the pages whose links are all
    known (most pages of a site: its navigation repeats everywhere)."""
    unique = list({link.key: link for link in links}.values())
    keys = [link.key for link in unique]
    known = set(
        CrawlPage.objects.filter(crawl_id=crawl_id, key__in=keys).values_list(
            "key", flat=True
        )
    )
    return [link for link in unique if link.key not in known]


def truncate(row: Crawl, reason: str) -> None:
    """The first reason stands: it is why the crawl is incomplete."""
    Crawl.objects.filter(pk=row.pk, truncated="").update(truncated=reason[:255])


def register(
    check: Check, row: Crawl, target: Target, links: Sequence[Link]
) -> list[CheckBatch]:
    """Put links in the frontier and in new batches of the check (the caller
    holds the check row locked, so batch numbers cannot collide)."""
    if not links:
        return []
    CrawlPage.objects.bulk_create(
        [CrawlPage(crawl=row, key=k.key, url=k.url, depth=k.depth) for k in links]
    )
    return schedule(check, row, target, links)


def schedule(
    check: Check, row: Crawl, target: Target, links: Sequence[Link]
) -> list[CheckBatch]:
    """New batches of the check for links in the frontier (the caller
    holds the check row locked), counted as found."""
    Crawl.objects.filter(pk=row.pk).update(found=F("found") + len(links))
    Check.objects.filter(pk=check.pk).update(pages_total=F("pages_total") + len(links))
    # A crawl whose options need a browser, or whose monitor always uses
    # one, has every page on its queue.
    uses_browser = bool(browser_options(target.scrape_options or {})) or (
        target.monitor.fetch_with == target.monitor.FetchWith.BROWSER
    )
    size = int(
        settings.BROWSER_BATCH_SIZE if uses_browser else settings.CHECK_BATCH_SIZE
    )
    refs = [page_ref(target.id, link) for link in links]
    return CheckBatch.objects.append(check, refs, size=size, uses_browser=uses_browser)


def page_ref(target_id: uuid.UUID, link: Link, record: bool = True) -> list[Any]:
    """A crawl page in CheckBatch.pages: [target, url, scrape id, depth,
    follow its links, record it as a page]."""
    return [
        str(target_id),
        link.url,
        str(uuid.uuid4()),
        link.depth,
        link.follow,
        record,
    ]


# --- The end of the check --------------------------------------------------------


def close(check_id: uuid.UUID, record: Any) -> None:
    """Record the removed pages of every complete crawl of the check, once
    (the claim and the pages commit together), and its crawl results in
    targetResults. `record` is checks.pipeline.record.record_many."""
    check = Check.objects.select_related("monitor").get(pk=check_id)
    for row in Crawl.objects.filter(check_run=check, closed=False):
        target = check.monitor.targets.filter(pk=row.target_id).first()
        with transaction.atomic():
            if not Crawl.objects.filter(pk=row.pk, closed=False).update(closed=True):
                continue  # another worker closed it
            if CrawlPage.objects.filter(crawl=row, waiting=True).exists():
                limit = page_limit(target) if target is not None else row.found
                truncate(row, LIMIT_REASON.format(limit=limit))
            row.refresh_from_db()
            if target is not None and not row.truncated:
                items = removed_items(check, row, target)
                for start in range(0, len(items), 100):
                    record(check, items[start : start + 100])
    with transaction.atomic():
        locked = Check.objects.select_for_update().get(pk=check_id)
        locked.target_results = crawl_results(locked)
        locked.save(update_fields=["target_results"])


def removed_items(check: Check, row: Crawl, target: Target) -> list[Item]:
    scope = scope_of(target, row)
    # A row whose address is not its own stands for another page (a link
    # that redirected), and a copy for the page it names: the page the
    # target had under the row's own address was not found again.
    rows = CrawlPage.objects.filter(crawl=row).values_list("key", "url", "copy_of")
    seen = {
        key for key, url, copy_of in rows if url and scope.key(url) == key
        and not copy_of
    }  # fmt: skip
    states = PageState.objects.filter(
        monitor_id=check.monitor_id,
        target_id=target.id,
        presence=PageState.Presence.ACTIVE,
        snapshot__isnull=False,
    )
    items: list[Item] = []
    for state in states.iterator():
        if scope.key(state.url) in seen:
            continue
        if not scope.robots_allow(state.url):
            items.append(kept_out(check, target, state))
            continue
        job = PageJob(
            target.id, state.url, target.scrape_options or {}, 0, uuid.uuid4()
        )
        items.append(Item(job, moved_away(state), state))
    return items


def crawl_results(check: Check) -> list[dict[str, Any]]:
    """targetResults with each crawl's counts and completeness filled in."""
    rows = {row.target_id: row for row in Crawl.objects.filter(check_run=check)}
    counts = _status_counts(check)
    results = []
    for result in check.target_results or []:
        row = rows.get(_uuid(result.get("targetId")))
        if row is not None:
            result = result | _crawl_result(row, counts.get(row.target_id, {}))
        results.append(result)
    return results


def _crawl_result(row: Crawl, counts: dict[str, int]) -> dict[str, Any]:
    result = {
        "crawlId": str(row.public_id),
        "pagesFound": row.found,
        "truncated": bool(row.truncated),
        "truncatedReason": row.truncated or None,
        "removedProcessed": row.closed and not row.truncated,
        "pages": counts,
    }
    if row.start_url:
        result["startUrl"] = row.start_url  # where the start URL led
    return result


def _status_counts(check: Check) -> dict[uuid.UUID, dict[str, int]]:
    counts: dict[uuid.UUID, dict[str, int]] = {}
    rows = (
        PageResult.objects.filter(check_run=check)
        .values_list("target_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for target_id, status, n in rows:
        counts.setdefault(target_id, {})[status] = n
    return counts


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
