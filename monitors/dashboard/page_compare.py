"""A page's changes since an older version of it: the versions a page's diff
view offers to compare with, and the chosen one's changes, derived from the
two stored copies (nothing new is stored)."""

from __future__ import annotations

import uuid
from typing import Any

from django.utils.safestring import mark_safe

from checks.content import (
    ExtractionError,
    render_inline,
    render_side_by_side,
    strip_noise,
)
from checks.content.marked import marked_html
from checks.models import PageResult, Snapshot
from monitors.dashboard.base import SNAPSHOT_DISPLAY_CHARS

# The newest versions offered; the oldest one kept is offered after them, so
# "since the start" stays one choice away however long the history.
VERSIONS_OFFERED = 50
GONE = (
    "That earlier version of this page is not kept any more, or is not one of "
    "this page's versions. Its changes since then cannot be shown; the changes "
    "this check found are shown instead."
)


def _offered(page: PageResult) -> list[PageResult]:
    versions = PageResult.objects.versions_before(page).only(
        "id", "status", "status_code", "error_kind", "created_at"
    )
    newest = list(versions[:VERSIONS_OFFERED])
    if len(newest) == VERSIONS_OFFERED:
        oldest = versions.order_by("created_at", "id").first()
        if oldest is not None and oldest.pk != newest[-1].pk:
            newest.append(oldest)
    return newest


def _chosen(page: PageResult, value: str) -> PageResult | None:
    try:
        pk = uuid.UUID(value)
    except ValueError:
        return None
    return (
        PageResult.objects.versions_before(page)
        .select_related("current_snapshot")
        .filter(pk=pk)
        .first()
    )


def _text(snapshot: Snapshot | None) -> str | None:
    if snapshot is None:
        return None
    try:
        return snapshot.text[:SNAPSHOT_DISPLAY_CHARS]
    except (ValueError, ExtractionError):  # a damaged row: say so, not a 500
        return None


def diff_between(old: str, new: str, layout: str) -> tuple[str, bool]:
    """The changes from `old` to `new` as the diff view shows them in
    `layout`, and whether the page-text view stopped early."""
    if layout == "text":
        html, _, cut = marked_html(old, new)
        return html, cut
    render = render_inline if layout == "inline" else render_side_by_side
    return render(old, new), False


def comparison(page: PageResult, choice: str, layout: str) -> dict[str, Any]:
    """The diff view's context for comparing `page` with the version `choice`
    names (a page result's id from the address; empty for the usual view)."""
    if page.current_snapshot_id is None or (page.metadata or {}).get("searchStatus"):
        return {}
    context: dict[str, Any] = {"compare_versions": _offered(page)}
    if not choice:
        return context
    chosen = _chosen(page, choice)
    old = _text(chosen.current_snapshot) if chosen else None
    new = _text(page.current_snapshot)
    if chosen is None or old is None or new is None:
        return context | {"compare_problem": GONE}
    ignored = page.check_run.monitor.ignore_lines or []
    html, cut = diff_between(
        strip_noise(old, ignored), strip_noise(new, ignored), layout
    )
    if chosen not in context["compare_versions"]:
        context["compare_versions"].append(chosen)
    # checks.content escapes every piece of page text before wrapping it in
    # its own tags; the template puts it under hx-disable.
    return context | {
        "compare_with": chosen,
        "compare_html": mark_safe(html),  # noqa: S308
        "compare_cut": cut,
    }
