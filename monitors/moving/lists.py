"""A list of addresses: one URL per line, or a CSV with a `url` column and
optional `name`, `schedule` (a phrase like "every 30 minutes", or cron),
`timezone` (or `time zone`: the zone of the schedule's times, else the
team's, see plan.in_team_zone) and `goal` columns. Cells are only ever read
as text: a spreadsheet formula (=HYPERLINK(...)) is a name like any other,
never evaluated."""

from __future__ import annotations

import csv
import io
import re

from monitors import rules
from monitors.moving.base import (
    MAX_ITEMS,
    Draft,
    ImportRefused,
    Planned,
    Source,
    not_imported,
    recognise,
    schedule_for_seconds,
)
from monitors.schedule import (
    ScheduleError,
    looks_like_cron,
    min_interval_minutes,
    min_interval_words,
    normalize_schedule,
    normalize_timezone,
)

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


# What a spreadsheet separates cells with: Excel writes ";" where the decimal
# mark is a comma, and a tab in its "Unicode text".
_DELIMITERS = (",", ";", "\t")


def _text(data: bytes) -> str:
    """The file as text: UTF-8, UTF-16 with its byte order mark (Excel's
    "Unicode text"), else Windows-1252, what Excel saves a CSV in on Windows
    (the preview shows every name as read, before anything is created)."""
    try:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            text = data.decode("utf-16")
        else:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                text = data.decode("cp1252")
    except UnicodeDecodeError:
        text = "\x00"
    if "\x00" in text:  # Windows-1252 reads most binary files too
        raise ImportRefused(
            "The file is not text in an encoding Pagewatch reads: save it as "
            "UTF-8 (“CSV UTF-8” in a spreadsheet)."
        )
    return text


def _delimiter(text: str) -> str | None:
    """The cell separator of a CSV's header row naming a url column."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    for delimiter in _DELIMITERS:
        cells = [c.strip().strip('"').lower() for c in first.split(delimiter)]
        if "url" in cells and len(cells) > 1:
            return delimiter
    return None


# The columns a list is read by; another tool's export names its watch's
# name one of the others (Visualping: "Description").
_COLUMNS = {"url", "name", "schedule", "timezone", "time zone", "goal"}
_NAME_COLUMNS = ("name", "title", "description")


def _row(number: int, row: dict[str, str]) -> Planned:
    ref = f"row {number}"
    url = (row.get("url") or "").strip()
    named = next((c for c in _NAME_COLUMNS if (row.get(c) or "").strip()), "name")
    name = (row.get(named) or "").strip()
    if not url:
        return not_imported(ref, name, [], "The url cell is empty.")
    draft = Draft(ref=ref, url=url, name=name)
    for column, value in row.items():
        if column not in _COLUMNS and column != named and value.strip():
            draft.notes.append(
                f"The {column or 'unnamed'} column (“{value.strip()[:60]}”) not "
                "imported: a list's columns are url, name, schedule, time zone "
                "and goal."
            )
    if name.startswith(FORMULA_STARTS[:4]):
        draft.notes.append(
            "The name looks like a spreadsheet formula; it is kept as plain text."
        )
    schedule = (row.get("schedule") or "").strip()
    goal = (row.get("goal") or "").strip()
    if goal:
        draft.goal = goal
    planned = draft.plan()
    if schedule and planned.payload is not None:
        planned.payload["schedule"], planned.spread_every = _schedule(
            schedule, planned.notes
        )
        zone = _zone(row, planned.notes)
        if zone and planned.spread_every is None:
            planned.payload["schedule"]["timezone"] = zone
        planned.notes = [n for n in planned.notes if not n.startswith("No check")]
    return planned


def _zone(row: dict[str, str], notes: list[str]) -> str | None:
    """The row's time zone cell, when it names one we know."""
    given = (row.get("timezone") or row.get("time zone") or "").strip()
    if not given:
        return None
    try:
        return normalize_timezone(given)
    except ScheduleError:
        notes.append(f"“{given}” is not a time zone we know.")
        return None


_PLAIN_EVERY = re.compile(r"every (?P<n>\d{1,4}) (?P<unit>minutes?|mins?|hours?|hrs?)")


def _schedule(given: str, notes: list[str]) -> tuple[dict[str, str], float | None]:
    """The schedule cell as the API takes it; one that runs more often than
    the minimum is raised to it (and said), as intervals of other tools are.
    Any other problem is left for the API's validation to name. With it,
    the seconds of a schedule spread over its gap (None: as given). A
    schedule as given names no zone: plan.in_team_zone gives it the team's."""
    kind = "cron" if looks_like_cron(given) else "text"
    try:
        cron, text = (given, None) if kind == "cron" else (None, given)
        normalize_schedule(cron, text, "UTC")
    except ScheduleError as exc:
        if exc.code == rules.SCHEDULE_TOO_OFTEN.code:
            notes.append(
                f"“{given}” runs more often than Pagewatch checks: it is checked "
                f"every {min_interval_words()}."
            )
            seconds = min_interval_minutes() * 60
            return schedule_for_seconds(seconds, []), seconds
        if every := _PLAIN_EVERY.fullmatch(given.strip().lower()):
            # A gap a schedule cannot keep evenly ("every 7 minutes"): rounded
            # up, and said, as another tool's interval is.
            unit = 3600 if every["unit"].startswith("h") else 60
            seconds = int(every["n"]) * unit
            return schedule_for_seconds(seconds, notes), seconds
    return {kind: given}, None


class Lists(Source):
    name = "csv"
    label = "A list of addresses"
    steps = (
        "Upload a text file with one URL per line, or a CSV with a url column "
        "and optional name, schedule, time zone and goal columns."
    )

    def read_file(self, data: bytes, filename: str = "") -> list[Planned]:
        # Another tool's file read line by line is a row of nonsense per
        # line: refused whole (monitors.moving.read names the tool it is),
        # before its encoding is judged (a zip is not text either).
        head = data.removeprefix(b"\xef\xbb\xbf").lstrip()[:1]
        if head in (b"{", b"[") or recognise(filename, data) is not None:
            raise ImportRefused("The file is not a list of addresses.")
        text = _text(data)
        delimiter = _delimiter(text)
        if filename.lower().endswith(".csv") or delimiter:
            return self._csv(text, delimiter or ",")
        items = []
        lines = [line.strip() for line in text.splitlines()]
        urls = [line for line in lines if line and not line.startswith("#")]
        for number, url in enumerate(urls[: MAX_ITEMS + 1], start=1):
            items.append(_row(number, {"url": url}))
        return items

    def _csv(self, text: str, delimiter: str) -> list[Planned]:
        try:
            reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
            fields = [f.strip().lower() for f in reader.fieldnames or []]
            if "url" not in fields:
                raise ImportRefused(
                    "The CSV has no url column (its first row names them)."
                )
            reader.fieldnames = fields
            items = []
            for number, row in enumerate(reader, start=2):
                if len(items) > MAX_ITEMS:
                    break
                if not any(
                    (v or "").strip() for v in row.values() if isinstance(v, str)
                ):
                    continue
                cells = {
                    k: v
                    for k, v in row.items()
                    if isinstance(k, str) and isinstance(v, str)
                }
                items.append(_row(number, cells))
        except csv.Error as exc:
            raise ImportRefused(f"The CSV cannot be read: {exc}.") from None
        return items
