"""Distill: the JSON its Export button writes, {"client": ..., "data": [sieve]}
(older exports: "sieves"). A sieve's `config` and `schedule` are JSON written
as strings inside the JSON."""

from __future__ import annotations

import json
from typing import Any

from monitors import rules
from monitors.moving.base import (
    MAX_ITEMS,
    Draft,
    ImportRefused,
    Planned,
    Source,
    load_json,
    not_imported,
    split_tags,
)

# Distill's sieve states: 90 is a monitor switched off.
PAUSED_STATES = {90, "90", "PAUSED", "OFF"}


def _object(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def _selections(config: dict[str, Any], draft: Draft) -> None:
    for selection in config.get("selections") or []:
        if not isinstance(selection, dict):
            continue
        if selection.get("dynamic"):
            draft.browser = True
        for frame in selection.get("frames") or []:
            if not isinstance(frame, dict):
                continue
            if frame.get("index", 0) not in (0, None):
                draft.notes.append(
                    "Selections inside frames not imported, because Pagewatch "
                    "reads the page itself, not its frames."
                )
                continue
            for key, into in (
                ("includes", draft.include_tags),
                ("excludes", draft.exclude_tags),
            ):
                for rule in frame.get(key) or []:
                    if not isinstance(rule, dict):
                        continue
                    kind, expr = rule.get("type"), str(rule.get("expr") or "")
                    if kind == "css" and expr and not rules.css_selector_error(expr):
                        into.append(expr)
                    elif kind == "xpath":
                        draft.notes.append(
                            f"XPath selection “{expr}” not imported, because "
                            "Pagewatch selects parts of pages with CSS only."
                        )
                    elif expr:
                        draft.notes.append(
                            f"Selection “{expr}” not imported: Pagewatch "
                            "cannot read it."
                        )


def _draft(number: int, sieve: dict[str, Any]) -> Draft | Planned:
    ref = str(sieve.get("id") or f"monitor {number}")
    name = str(sieve.get("name") or "")
    url = sieve.get("uri") or sieve.get("url")
    if not isinstance(url, str) or not url.strip():
        return not_imported(ref, name, [], "It has no URL.")
    draft = Draft(ref=ref, url=url, name=name)
    draft.tags = split_tags(sieve.get("tags"))
    draft.paused = sieve.get("state") in PAUSED_STATES
    schedule = _object(sieve.get("schedule"))
    params = schedule.get("params") or {}
    interval = params.get("interval") if isinstance(params, dict) else None
    if schedule.get("type") == "INTERVAL" and isinstance(interval, int | float):
        draft.interval_seconds = float(interval)
    elif schedule:
        draft.notes.append(
            f"Schedule “{schedule.get('type')}” not imported, because Pagewatch "
            "runs checks on a timer: checked every hour."
        )
        draft.interval_seconds = 0  # said above: not "no interval given" too
    config = _object(sieve.get("config"))
    _selections(config, draft)
    if config.get("regexp"):
        draft.notes.append(
            "The text filter (regular expression) not imported, because Pagewatch "
            "compares the whole selected text."
        )
    if sieve.get("actions") or config.get("actions"):
        draft.notes.append(
            "Alerts and actions not imported: add a channel on the Channels page "
            "and pick it in this monitor's form."
        )
    if config.get("macro") or sieve.get("macro_id"):
        draft.notes.append(
            "The macro (steps before reading) not imported, because Pagewatch's "
            "page actions are written differently."
        )
    return draft


class Distill(Source):
    name = "distill"
    label = "Distill"
    steps = "In Distill, select the monitors, choose Export and upload the JSON file."

    def read_file(self, data: bytes, filename: str = "") -> list[Planned]:
        document = load_json(data, "The file")
        sieves = None
        if isinstance(document, dict):
            sieves = document.get("data", document.get("sieves"))
        elif isinstance(document, list):
            sieves = document
        if not isinstance(sieves, list):
            raise ImportRefused(
                "The file is not a Distill export: it holds no list of monitors."
            )
        items = []
        for number, sieve in enumerate(sieves[: MAX_ITEMS + 1], start=1):
            if not isinstance(sieve, dict):
                items.append(
                    not_imported(f"monitor {number}", "", [], "Not a monitor.")
                )
                continue
            draft = _draft(number, sieve)
            items.append(draft.plan() if isinstance(draft, Draft) else draft)
        return items
