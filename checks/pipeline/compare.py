"""The compare stage: pages whose text differs from their baseline's stored
hash -> same or changed, against the baseline's text.

The extract stage decides every page it can from hashes alone; the pages it
leaves pending are compared here, once, with their baselines' text read in
one query: same when the normalised Markdown is, changed (with its diff and
the reference it is packed against) otherwise. The monitor's noise rule
(`ignore_lines`) applies to the baseline as to the page. A changed page whose
monitor's change rules ask whether a text appears or disappears keeps both
compared texts for the judge stage, which decides them.
"""

from __future__ import annotations

from collections.abc import Sequence

from checks.content import (
    SOURCE_MARKDOWN,
    ExtractionError,
    as_read,
    compare_texts,
    diff_reference,
    markdown_of,
    media_type_of,
    pack_snapshot,
    strip_noise,
    unpack,
)
from checks.models import PageResult, PageState, Snapshot
from checks.pipeline.outcome import Item, Outcome


def compare(items: Sequence[Item]) -> None:
    """Settle the pending pages among these, reading their baselines' text
    in one query."""
    pending = [item for item in items if item.outcome.pending is not None]
    if not pending:
        return
    stored = Snapshot.packed(
        item.baseline.snapshot_id for item in pending if item.baseline is not None
    )
    for job, outcome, baseline in pending:
        assert baseline is not None and baseline.snapshot_id is not None
        rules = job.change_rules
        compare_page(
            outcome,
            baseline,
            stored.get(baseline.snapshot_id),
            job.ignore_lines,
            keep_texts=rules is not None and rules.reads_whole_text,
        )


def compare_page(
    outcome: Outcome,
    baseline: PageState,
    previous: tuple[bytes, str] | None,
    ignore_lines: Sequence[str] = (),
    *,
    keep_texts: bool = False,
) -> None:
    """Settle one pending outcome with the baseline's stored (data, format).
    An unreadable baseline reports the page changed in full (and no change
    rule decides it: baseline_unread). `keep_texts`:
    a changed page keeps both compared texts for the change rules."""
    content = outcome.content
    assert outcome.pending is not None and content is not None
    source_format, source, after = outcome.pending
    outcome.pending = None
    before = stored = ""
    outcome.baseline_unread = previous is None
    if previous is not None:
        try:
            stored = unpack(previous[0])
            text = markdown_of(previous[1], stored)
        except (ExtractionError, ValueError):
            text = ""
            outcome.baseline_unread = True
        if previous[1] == SOURCE_MARKDOWN:
            # A text baseline stored before JSON keys were sorted, or XML put
            # one element a line, reads as it would now: the new layout
            # alone is no change.
            media_type = media_type_of(outcome.metadata.get("contentType") or "")
            text = as_read(media_type, text)
        before = strip_noise(text, ignore_lines)
    before_hash, digest, diff = compare_texts(before, after)
    if before_hash == digest:
        outcome.keep_baseline(baseline, source, source_format, digest)
        return
    outcome.status = PageResult.Status.CHANGED
    outcome.diff = diff
    outcome.diff_reference = diff_reference(stored, source)
    if keep_texts:
        outcome.compared = (before, after)
    content.normalized_hash = digest
    content.snapshot = pack_snapshot(source, source_format)
