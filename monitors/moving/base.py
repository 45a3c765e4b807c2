"""What every source's reader gives: a list of planned items, one per watch of
the source, each saying what it becomes (a /v2/monitor create body) or why it
is not imported, with notes of whatever was changed or left behind on the way.

Readers turn a foreign watch into a `Draft` (the few things every monitoring
tool has: a URL, a name, how often, what to look at), and the Draft words the
payload; sources that already speak the /v2/monitor shape hand over the body
as it is. Nothing here validates: monitors.moving.plan puts every payload
through the API's own serializer.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder

from monitors import rules
from monitors.schedule import min_interval_minutes
from monitors.target_kinds import pages_target
from monitors.time_words import wire_time


@dataclass(frozen=True)
class Bounds:
    """How long one reading may take, and how many watches it may read."""

    seconds: int
    watches: int | None = None

    def too_slow(self) -> str:
        if self.watches is None:
            return (
                f"in {self.seconds // 60} minutes, the longest one import waits. "
                "Try again when it is less busy, or upload a file of its watches "
                "instead."
            )
        return f"in {self.seconds} seconds, the longest a request waits. {ELSEWHERE}"


ELSEWHERE = (
    "Import them on the dashboard's Import page, which reads them in the "
    "background, or send a file of its watches instead."
)


# What one import reads: more watches than this is not one team's monitors.
# Readers read one more, so that `capped` can say the rest were left out.
MAX_ITEMS = 5000
# An interval a source does not say: how often its watches are checked here.
DEFAULT_MINUTES = 60
_WEEK_MINUTES = 7 * 24 * 60
# The gaps a cron schedule can keep exactly: divisors of an hour, of a day.
_MINUTE_STEPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)
_HOUR_STEPS = (1, 2, 3, 4, 6, 8, 12)


class ImportRefused(Exception):
    """The whole source cannot be read: a message fit to show a person."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


# changedetection.io's datastore, by the names its releases gave it.
DATASTORES = ("changedetection.json", "url-watches.json")


def is_datastore(data: bytes) -> bool:
    """Whether a file is a changedetection.io datastore uploaded on its own
    (a JSON object) rather than the backup zip that holds it."""
    return data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{"


_URLWATCH_JOB = re.compile(rb"^(url|navigate|command):", re.MULTILINE)


def recognise(filename: str, data: bytes) -> str | None:
    """The source a file surely is, from its name and first bytes; None
    when it could be several (any JSON could be Distill's)."""
    name, head = filename.lower(), data[:65536]
    if data[:4] == b"PK\x03\x04" or name.endswith(".zip"):
        return "changedetection"
    if name.endswith(DATASTORES) or (is_datastore(data) and b'"watching"' in head):
        return "changedetection"
    if b'"pagewatch-export"' in data[:4096]:
        return "pagewatch"
    if data.lstrip()[:1] in (b"{", b"["):
        if b'"targets"' in head and b'"schedule"' in head:
            return "firecrawl"
        if b'"sieves"' in head or b'"uri"' in head:
            return "distill"
        return None
    if name.endswith((".yaml", ".yml")) or _URLWATCH_JOB.search(head):
        return "urlwatch"
    return None


class JsonRefused(ImportRefused):
    """A file that is not valid JSON (load_json)."""


def max_bytes() -> int:
    return int(settings.IMPORT_MAX_BYTES)


@dataclass
class Baseline:
    """The last content a source saw on a page: it becomes the page's first
    baseline, so the first check here compares instead of calling it new."""

    url: str
    text: str
    taken_at: datetime | None = None


@dataclass
class Planned:
    """One watch of the source and what it becomes here."""

    ref: str  # the source's own name for it: a uuid, a line, a job number
    label: str  # its name, as the preview table shows it
    urls: list[str]
    payload: dict[str, Any] | None  # the /v2/monitor create body
    reason: str = ""  # why it is not imported (payload is None)
    notes: list[str] = field(default_factory=list)
    baselines: list[Baseline] = field(default_factory=list)
    paused: bool = False
    duplicate: bool = False
    # A duplicate of an earlier item of the same source, not of a monitor:
    # that item's label.
    same_address_as: str = ""
    # The Apprise URLs the source notifies for it; plan.apprise_channels
    # turns those a channel can take into `channels` ({"url", "name", "new"}:
    # the team's channel of that URL, or one the import makes), which the
    # import links the monitor to.
    notify_urls: list[str] = field(default_factory=list)
    channels: list[dict[str, Any]] = field(default_factory=list)
    # Set by monitors.moving.plan: the serializer's validated data.
    validated: dict[str, Any] | None = None
    # The source's "every N seconds" (0: none given) when the schedule was
    # made from it: readers write it at the start of its gap, and
    # plan.prepare moves it to the importing team's place within the gap.
    spread_every: float | None = None

    @property
    def importable(self) -> bool:
        return self.validated is not None

    def refuse(self, reason: str) -> None:
        self.payload, self.validated, self.reason = None, None, reason

    def to_state(self) -> dict[str, Any]:
        """The item as an ImportRun keeps it between preview and import."""
        return {
            "ref": self.ref,
            "label": self.label,
            "urls": self.urls,
            "payload": self.payload,
            "reason": self.reason,
            "notes": self.notes,
            "baselines": [
                [b.url, b.text, b.taken_at.isoformat() if b.taken_at else None]
                for b in self.baselines
            ],
            "paused": self.paused,
            # As judged when previewed: shown again without judging again.
            "validated": json.loads(json.dumps(self.validated, cls=DjangoJSONEncoder)),
            "duplicate": self.duplicate,
            "same_address_as": self.same_address_as,
            "notify_urls": self.notify_urls,
            "channels": self.channels,
            # Kept for a preview judged by a task, after the request that
            # read the source has gone (plan.spread_for needs it).
            "spread_every": self.spread_every,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Planned:
        return cls(
            ref=state["ref"],
            label=state["label"],
            urls=state["urls"],
            payload=state["payload"],
            reason=state["reason"],
            notes=state["notes"],
            baselines=[
                Baseline(url, text, datetime.fromisoformat(at) if at else None)
                for url, text, at in state["baselines"]
            ],
            paused=state["paused"],
            validated=state.get("validated"),
            duplicate=state.get("duplicate", False),
            same_address_as=state.get("same_address_as", ""),
            notify_urls=state.get("notify_urls", []),
            channels=state.get("channels", []),
            spread_every=state.get("spread_every"),
        )

    def as_dict(self) -> dict[str, Any]:
        """The item as the API's answer and the command's report list it."""
        return {
            "ref": self.ref,
            "name": self.label,
            "urls": self.urls,
            "imported": self.importable,
            "monitor": (
                self.payload | {"status": "paused" if self.paused else "active"}
            )
            if self.importable and self.payload is not None
            else None,
            "reason": self.reason or None,
            "notes": self.notes,
            "duplicate": self.duplicate,
            "sameAddressAs": self.same_address_as or None,
            # Its channels' names only: an Apprise URL holds the service's
            # secret, and a channel's is never shown again once written.
            "channels": [c["name"] for c in self.channels] if self.importable else [],
            "baselines": len(self.baselines),
        }


def schedule_for_seconds(
    seconds: float | None, notes: list[str], address: str = "", team: str = ""
) -> dict[str, str]:
    """A cron schedule for "every N seconds": the 5-minute minimum kept (and
    said when it raised the interval), gaps a cron schedule cannot keep
    rounded up to the next one it can (and said).

    Each address runs at its own place within the gap (see `_spread`), so
    hundreds of watches checked "every 3 hours" elsewhere do not all run here
    at :00 of the same hour; with `team` (its slug) each team has its own
    places, so teams importing the same list do not all run it at once."""
    spread = _spread(address, team)
    if not seconds or not seconds > 0:  # NaN too
        return {"cron": _cron_every(DEFAULT_MINUTES, spread)[0], "timezone": "UTC"}
    if seconds > _WEEK_MINUTES * 60:
        # The longest gap made here is a week; an absurd interval (1e308
        # weeks, a 400-digit number of hours) would not even survive the
        # arithmetic below.
        notes.append(
            "Checked less often than once a week there; it is checked every week "
            "(its schedule can be changed after the import)."
        )
        seconds = _WEEK_MINUTES * 60
    wanted = max(1, math.ceil(seconds / 60))
    floor = min_interval_minutes()
    minutes = max(wanted, floor)
    if wanted < floor:
        notes.append(
            f"Checked every {_minutes_words(wanted)} there; Pagewatch checks at "
            f"most every {_minutes_words(floor)}, so it is checked every "
            f"{_minutes_words(floor)}."
        )
    cron, kept = _cron_every(minutes, spread)
    if kept != minutes:
        notes.append(
            f"Every {_minutes_words(minutes)} is not a gap a schedule can keep "
            f"evenly; it is checked every {_minutes_words(kept)}."
        )
    return {"cron": cron, "timezone": "UTC"}


def _spread(address: str, team: str = "") -> int:
    """A number fixed by the address and the team (not Python's per-process
    hash()), so a team importing the same watch again gives it the same
    schedule, and another team another one. No address: no offset, at the
    start of the gap."""
    if not address:
        return 0
    key = f"{team}\n{address}" if team else address
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _cron_every(minutes: int, spread: int = 0) -> tuple[str, int]:
    """The cron running every `minutes` (rounded up to a gap a cron keeps),
    offset within that gap by `spread` minutes modulo the gap."""
    # Past the last divisor of an hour (31 to 59 minutes) the next gap a
    # cron keeps is the hour itself.
    if minutes <= _MINUTE_STEPS[-1]:
        step = next(s for s in _MINUTE_STEPS if s >= minutes)
        return f"{_stepped(spread % step, step, 59)} * * * *", step
    hours = math.ceil(minutes / 60)
    if hours < 24:
        step = next(s for s in _HOUR_STEPS if s >= hours)
        slot = spread % (step * 60)
        minute, hour = slot % 60, slot // 60
        return f"{minute} {_stepped(hour, step, 23)} * * *", step * 60
    slot = spread % (7 * 24 * 60)
    minute, hour, weekday = slot % 60, slot // 60 % 24, slot // (24 * 60)
    days = math.ceil(hours / 24)
    if days < 7:
        return f"{minute} {hour} * * *", 24 * 60
    return f"{minute} {hour} * * {weekday}", 7 * 24 * 60


def _stepped(offset: int, step: int, last: int) -> str:
    """A cron field for every `step` from `offset` up to `last`."""
    if step == 1:
        return "*"
    return f"{offset}-{last}/{step}" if offset else f"*/{step}"


def _minutes_words(minutes: int) -> str:
    if minutes % (24 * 60) == 0:
        days = minutes // (24 * 60)
        return "day" if days == 1 else f"{days} days"
    if minutes % 60 == 0:
        hours = minutes // 60
        return "hour" if hours == 1 else f"{hours} hours"
    return "minute" if minutes == 1 else f"{minutes} minutes"


@dataclass
class Draft:
    """A foreign watch in the terms every monitoring tool shares; `plan()`
    words it as a /v2/monitor create body."""

    ref: str
    url: str
    name: str = ""
    # The watch's groups (tags, labels, folders), by name.
    tags: list[str] = field(default_factory=list)
    interval_seconds: float | None = None
    cron: str | None = None
    goal: str | None = None
    include_tags: list[str] = field(default_factory=list)
    exclude_tags: list[str] = field(default_factory=list)
    ignore_lines: list[str] = field(default_factory=list)
    # Which changes matter (the API's changeRules, cleaned), None for every one.
    change_rules: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    browser: bool = False
    paused: bool = False
    # Its notifications muted there: muted here until someone unmutes it.
    muted: bool = False
    notify_urls: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    baselines: list[Baseline] = field(default_factory=list)

    def plan(self) -> Planned:
        url = self.url.strip()
        name = (self.name or "").strip() or url
        if len(name) > rules.NAME_MAX:
            name = name[: rules.NAME_MAX - 1] + "…"
        notes = list(self.notes)
        if self.cron:
            schedule = {"cron": self.cron, "timezone": "UTC"}
        else:
            schedule = schedule_for_seconds(self.interval_seconds, notes)
            if self.interval_seconds is None:
                notes.append("No check interval given: checked every hour.")
        options: dict[str, Any] = {}
        if self.include_tags:
            options["includeTags"] = list(dict.fromkeys(self.include_tags))
        if self.exclude_tags:
            options["excludeTags"] = list(dict.fromkeys(self.exclude_tags))
        if self.headers:
            options["headers"] = dict(self.headers)
        target = pages_target([url], options)
        payload: dict[str, Any] = {
            "name": name,
            "schedule": schedule,
            "targets": [target],
        }
        ignore = rules.clean_ignore_lines(self.ignore_lines)
        if len(ignore) > rules.IGNORE_LINES_MAX:
            notes.append(
                f"{len(ignore) - rules.IGNORE_LINES_MAX} lines to ignore not "
                f"imported, because a monitor takes at most "
                f"{rules.IGNORE_LINES_MAX}."
            )
            ignore = ignore[: rules.IGNORE_LINES_MAX]
        if ignore:
            payload["ignoreLines"] = ignore
        if self.change_rules:
            payload["changeRules"] = self.change_rules
        if tags := usable_tags(self.tags, notes):
            payload["tags"] = tags
        if self.browser:
            payload["fetchWith"] = "browser"
        if self.goal:
            payload["goal"] = self.goal
        if self.muted:
            payload["mutedUntil"] = wire_time(rules.MUTED_FOREVER)
        return Planned(
            ref=self.ref,
            label=name,
            urls=[url],
            payload=payload,
            notes=notes,
            baselines=[b for b in self.baselines if b.url == url],
            paused=self.paused,
            notify_urls=list(dict.fromkeys(self.notify_urls)),
            spread_every=None if self.cron else self.interval_seconds or 0,
        )


def usable_tags(names: list[str], notes: list[str]) -> list[str]:
    """The tags a monitor can have of these names; a note for each left out."""
    kept = []
    for name in rules.clean_tags(names):
        problem = rules.tag_error(name)
        if problem:
            notes.append(f"Tag “{name[:60]}” not imported: {problem}")
        else:
            kept.append(name)
    if len(kept) > rules.MONITOR_TAGS_MAX:
        left = ", ".join(f"“{n}”" for n in kept[rules.MONITOR_TAGS_MAX :])
        notes.append(
            f"Tags {left} not imported, because a monitor takes at most "
            f"{rules.MONITOR_TAGS_MAX}."
        )
    return kept[: rules.MONITOR_TAGS_MAX]


def split_tags(value: Any) -> list[str]:
    """Tags given as a list, or as one text with commas between them."""
    items = value if isinstance(value, list) else [value] if value else []
    return [part for item in items for part in str(item).split(",")]


def not_imported(ref: str, label: str, urls: list[str], reason: str) -> Planned:
    return Planned(ref=ref, label=label or ref, urls=urls, payload=None, reason=reason)


def capped(items: list[Planned]) -> list[Planned]:
    """At most MAX_ITEMS items, and a row saying so when a source held more:
    the watches past them are named as not read, never dropped in silence."""
    if len(items) <= MAX_ITEMS:
        return items
    return items[:MAX_ITEMS] + [
        not_imported(
            "more",
            f"The watches after the first {MAX_ITEMS:,}",
            [],
            f"Not read: one import takes at most {MAX_ITEMS:,} watches. Import "
            "the rest from a second file holding only them.",
        )
    ]


def plain_regex(pattern: str) -> str | None:
    """An ignoreLines entry for a regular expression, or None when RE2 (the
    noise rule's engine) cannot read it."""
    entry = f"/{pattern}/"
    return entry if rules.ignore_line_error(entry) is None else None


def load_json(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise JsonRefused(f"{what} is not valid JSON ({_short(exc)}).") from None


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


class Source:
    """One place watches come from. A subclass names itself (`name`, the
    value of POST /v2/import's `source`), says how it is read (a file, a base
    URL with a key, or both) and in what words (`label`, `steps`); the
    registry below is built from the subclasses, never kept beside them."""

    name: ClassVar[str]
    label: ClassVar[str]
    steps: ClassVar[str]
    reads_file: ClassVar[bool] = True
    reads_remote: ClassVar[bool] = False
    registry: ClassVar[dict[str, type[Source]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Source.registry[cls.name] = cls

    @classmethod
    def label_in_sentence(cls) -> str:
        """The label as said mid-sentence ("imported from a list of
        addresses"); the names of tools (changedetection.io, Distill) keep
        their own case."""
        return "a " + cls.label[2:] if cls.label.startswith("A ") else cls.label

    def read_file(self, data: bytes, filename: str = "") -> list[Planned]:
        raise ImportRefused(f"{self.label} is imported from its address, not a file.")

    def read_remote(
        self,
        url: str,
        api_key: str,
        progress: Callable[[int, int], None] | None = None,
        bounds: Bounds | None = None,
    ) -> list[Planned]:
        """The watches of a service read by its address and key; `progress`
        is told now and then how many of how many (0: not known) are read;
        `bounds` (remote.Bounds) say how long and how many, a worker's when
        not given."""
        raise ImportRefused(f"{self.label} is imported from a file, not an address.")
