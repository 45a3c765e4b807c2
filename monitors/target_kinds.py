"""The kinds of target, looked up by their `type`.

A kind is one class (checks.targets holds them) that owns everything about
its targets: how the API validates and shows them, the dashboard's fields and
words for them, what they cost, how a check plans their pages and what it
adds when it ends. The models, the runner, the serializers, the forms and the
templates ask `kind_for` / `all_kinds` and never name a kind.

The registry lives here, beside the models that ask it for credits and for
whether a target runs, so the domain never imports the engine: the engine's
app fills it when Django starts (checks.apps), and a plugin or a test adds a
kind with `register`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from monitors.judging import judge_available
from monitors.rules_problems import Problem, problems_in

# A Target (monitors.models) and a Check (checks.models): named loosely, so
# this module, which the models import, imports neither back.
Target = Any
Check = Any

__all__ = [
    "FormField",
    "TargetFailure",
    "TargetKind",
    "all_kinds",
    "choices",
    "failures_in",
    "kind_for",
    "kind_names",
    "pages_target",
    "register",
    "unregister",
]


@dataclass(frozen=True)
class FormField:
    """One control of a target's row in the dashboard's form, and where its
    value sits in the target's API object: the form reads the row into that
    object, the kind checks it (TargetKind.check, as for the API), and the
    problems at the control's path come back to the control
    (monitors.dashboard.forms.monitor)."""

    name: str
    label: str
    help: str = ""
    # The key path in the API object: ("urls",), ("crawlOptions", "limit").
    path: tuple[str, ...] = ()
    # How the typed text becomes JSON: text, lines (one per line), items
    # (split on spaces, commas, semicolons), pairs ("Name: value" lines),
    # number, check (a check box), choice, format (a check box that puts the
    # format named by `format` in the list at `path`, or takes it out).
    shape: str = "text"
    # The control: text, url, textarea, number, select, checkbox.
    widget: str = "text"
    initial: Any = ""
    # Sent even when empty (the kind's main field); otherwise an empty
    # control leaves its key out, and a check box at its initial value too.
    always: bool = False
    # Shown folded under the kind's advanced section.
    advanced: bool = False
    # Controls with the same non-empty row stand side by side.
    row: str = ""
    # How a list is shown back in its control, and each of its items (a
    # site kept in ASCII, shown in the letters people type).
    joiner: str = "\n"
    show_item: Callable[[str], str] | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict)
    choices: tuple[tuple[str, str], ...] = ()
    format: str = ""

    @property
    def takes_errors(self) -> bool:
        """Whether API errors at its path land on this control: a format's
        box only puts one format in or out, so problems with the list of
        formats stay on the target's row."""
        return self.shape != "format"


class TargetFailure(NamedTuple):
    """A target that failed its part of a check: its kind's label ("Web
    search") and what went wrong, in plain words."""

    label: str
    reason: str


def failures_in(target_results: Any) -> list[TargetFailure]:
    """The failed targets of a check, from its targetResults, each said by
    its kind (lines of a type no kind is registered for say nothing)."""
    found = []
    for result in target_results or []:
        if not isinstance(result, Mapping) or result.get("skipped"):
            continue
        kind = kind_for(str(result.get("type") or ""))
        if kind is not None and (reason := kind.failure(result)):
            found.append(TargetFailure(kind.label, reason))
    return found


class TargetKind:
    """What every kind of target is. Subclasses set the class attributes and
    override what differs from a list of pages fetched one by one."""

    name: ClassVar[str]
    # The dashboard's name for it ("Website crawl") and its help line.
    label: ClassVar[str]
    # The DRF serializer that validates the kind's API object (its `type`
    # included), through `check`, for the API and the dashboard form alike.
    serializer: ClassVar[Any]
    # Its targets need the monitor's goal (unless judging is switched off on
    # purpose): a web search reports only what matches one.
    needs_goal: ClassVar[bool] = False
    # The dashboard's controls for the kind's fields, in page order; the
    # objects under these API keys keep what the form does not show.
    form_fields: ClassVar[tuple[FormField, ...]] = ()
    kept_objects: ClassVar[tuple[str, ...]] = ()
    advanced_label: ClassVar[str] = "Advanced options"
    # The monitor page's lines about one target of the kind.
    summary_template: ClassVar[str] = "monitors/targets/summary.html"
    # The check page's part about the target's line in targetResults (with
    # `target`, None once deleted, and `result`); None for no part.
    check_template: ClassVar[str | None] = None
    # Its pages are found, not listed (a crawl's): the dashboard has a page of
    # every page it found (monitors.dashboard.checks.site_pages).
    finds_pages: ClassVar[bool] = False
    # It reports what it finds on the web, each result once (a web search's):
    # the dashboard lists those results (monitors.dashboard.search).
    finds_results: ClassVar[bool] = False
    # The API keys of what it watches (its pages, its queries); the rest of
    # its API object is its options.
    watched_keys: ClassVar[tuple[str, ...]] = ()

    # --- What it costs ----------------------------------------------------------

    def credits_per_page(self, target: Target) -> int:
        """A page's credits: 5 with JSON extraction, else 1. What a page
        lists as not applied is not charged: Firecrawl adds 4 for `lockdown`
        (the page served from its cache), but here the page is fetched live;
        and JSON extraction without an AI model (formats.json then) counts as
        a plain page. Asked at each estimate and check, so setting a model up
        counts it again."""
        options = target.scrape_options or {}
        credits = 1
        if not judge_available():
            return credits
        for fmt in options.get("formats") or []:
            kind = fmt.get("type") if isinstance(fmt, dict) else fmt
            modes = fmt.get("modes", []) if isinstance(fmt, dict) else []
            if kind == "json" or (kind == "changeTracking" and "json" in modes):
                credits = 5
        return credits

    def page_budget(self, target: Target) -> int:
        """The most pages one check of the target records."""
        return 0

    def estimated_credits(self, target: Target, *, judging: bool) -> int:
        pages = self.page_budget(target)
        return pages * self.credits_per_page(target) + (pages if judging else 0)

    def unavailable(self) -> str:
        """Why targets of this kind cannot run here ("" when they can)."""
        return ""

    # --- Its rules ------------------------------------------------------------

    def check(self, data: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
        """The target's API object checked by the kind's rules: (the object
        as it is stored, []) or ({}, the problems, at paths inside it). The
        API's serializers and the dashboard's form both ask this."""
        serializer = self.serializer(data=data)
        if serializer.is_valid():
            return dict(serializer.validated_data), []
        return {}, problems_in(serializer.errors)

    # --- The API ----------------------------------------------------------------

    def represent(self, target: Target) -> dict[str, Any]:
        """The target's object in API responses (after `id` and `type`)."""
        raise NotImplementedError

    # --- The dashboard --------------------------------------------------------

    def describe(self, target: Target) -> str:
        """The target in a few plain words ("Website crawl from example.com")."""
        return self.label

    def summary_items(self, target: Target) -> list[str]:
        """What it watches, item by item, for the monitor list's short line."""
        return [self.describe(target)]

    def failure(self, result: Mapping[str, Any]) -> str:
        """What kept the target from doing its part in a check, in plain
        words, read from its line in targetResults ("" when nothing did): a
        web search that failed. No page stands for it; the check ends partial
        or failed as it would for a page that failed, and says why."""
        return ""

    def check_result(self, check: Check, result: dict[str, Any]) -> dict[str, Any]:
        """The target's line in a check's targetResults, with what the check
        page shows beside it."""
        return result

    def watched(self, target: Target) -> list[str]:
        """What it watches as typed (addresses, queries), for the admin."""
        return self.addresses(target)

    def addresses(self, target: Target) -> list[str]:
        """The page addresses it names (a crawl's start page), for a list of
        a team's pages such as the CSV export; none for a web search."""
        return []

    def options(self, target: Target) -> dict[str, Any]:
        """Its API object without what it watches: its options, for the
        admin, each list's items shown as its control shows them (sites in
        letters, as on the dashboard)."""
        shape = self.represent(target)
        options = {k: v for k, v in shape.items() if k not in self.watched_keys}
        for spec in self.form_fields:
            key = spec.path[0] if len(spec.path) == 1 else None
            if spec.show_item and isinstance(options.get(key), list):
                options[key] = [spec.show_item(str(item)) for item in options[key]]
        return options

    def for_pages(
        self, urls: list[str], scrape_options: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """The API object of a target of this kind that watches these pages
        with these options (what an importer makes of another tool's page
        watch); None when the kind does not watch a list of pages."""
        return None

    def ignores_robots(self, target: Target) -> bool:
        """Whether it asks to pass over robots.txt (allowed only by a setting,
        see monitors.unavailable)."""
        return False

    # --- A check (checks.runner) ------------------------------------------------

    def plan(
        self, target: Target, stored: dict[str, Any], resolver: Any, alive: Any
    ) -> Any:
        """The target's source of pages for one check (see checks.pipeline.sources):
        its page jobs, what it saves beside its batches, and its line in
        targetResults. `stored` is that line when the check was planned
        before (a check taken over keeps its scrape ids). A kind whose
        planning waits calls `alive()` first, so the check is not taken for
        lost."""
        raise NotImplementedError

    def batch_group(self, target: Target) -> object:
        """Pages of one group share batches: by default every target's pages
        go together; a kind whose pages belong to their own run (a crawl,
        with its pace and its links) gives its own group."""
        return "pages"

    def pace(self, check_id: uuid.UUID, target: Target) -> tuple[int | None, float]:
        """(concurrency cap, seconds between requests) of the target's
        batches; (None, 0) when they may go as fast as the limiter lets them.
        A paced target's batches run one after another in one task."""
        return None, 0.0

    def for_batch(self, check: Check, jobs: Any, resolver: Any, now: Any) -> Any:
        """What the kind does within one batch of the check (see
        checks.targets.BatchParts), or None when it only fetches pages."""
        return None

    def held_back(self, check_id: uuid.UUID) -> list[Any]:
        """New batches (CheckBatch, committed) of pages the kind held back
        until no batch of the check was open (a crawl's links waiting for
        room within its limit); [] when there are none or a batch is open."""
        return []

    def finish(self, check_id: uuid.UUID) -> None:
        """What the kind adds once every batch of a check is done, before the
        check is finished (a crawl's removed pages, a search's counts)."""
        return None


_REGISTRY: dict[str, TargetKind] = {}


def register(cls: type[TargetKind]) -> type[TargetKind]:
    """Add a kind (the engine's own at start-up, a plugin, a test's)."""
    _REGISTRY[cls.name] = cls()
    return cls


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def kind_for(name: str) -> TargetKind | None:
    return _REGISTRY.get(name)


def all_kinds() -> list[TargetKind]:
    return list(_REGISTRY.values())


def choices() -> list[tuple[str, str]]:
    """Target.type's choices: every registered kind, so a kind added through
    the registry is a valid type without a migration or a model edit."""
    return [(name, kind.label) for name, kind in _REGISTRY.items()]


def kind_names(test: Callable[[TargetKind], bool]) -> list[str]:
    """The names of the kinds that pass `test`, for a query on Target.type."""
    return [name for name, kind in _REGISTRY.items() if test(kind)]


def pages_target(urls: list[str], scrape_options: Mapping[str, Any]) -> dict[str, Any]:
    """The API object of a target watching these pages (see for_pages)."""
    for kind in _REGISTRY.values():
        shape = kind.for_pages(urls, scrape_options)
        if shape is not None:
            return shape
    raise LookupError("no kind of target watches a list of pages")
