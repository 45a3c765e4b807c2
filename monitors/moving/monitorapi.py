"""Sources already in Pagewatch's own shape: any service speaking the
/v2/monitor API (Firecrawl's hosted monitors, another Pagewatch), read with a
key, and a Pagewatch export document. Both give monitors as the API shows
them; one function turns such a monitor back into a create body."""

from __future__ import annotations

from typing import Any

from monitors.moving import remote
from monitors.moving.base import (
    MAX_ITEMS,
    ImportRefused,
    Planned,
    Source,
    load_json,
    not_imported,
)
from monitors.moving.exporting import FORMAT

# The create body's keys, as a monitor answer carries them.
_KEPT = (
    "name",
    "schedule",
    "targets",
    "goal",
    "judgeEnabled",
    "ignoreLines",
    "changeRules",  # Pagewatch's
    "fetchWith",
    "webhook",
    "notification",
    "retentionDays",
    "tags",  # Pagewatch's; Firecrawl's monitors have none
    "mutedUntil",  # Pagewatch's too; one ended by import time is dropped
)
PAGE = 100


def planned_from_monitor(ref: str, monitor: Any) -> Planned:
    if not isinstance(monitor, dict):
        return not_imported(ref, "", [], "Not a monitor.")
    name = str(monitor.get("name") or "")
    targets = monitor.get("targets")
    if not isinstance(targets, list):
        return not_imported(ref, name, [], "It has no targets.")
    payload = {k: monitor[k] for k in _KEPT if monitor.get(k) is not None}
    schedule = payload.get("schedule")
    if isinstance(schedule, dict):
        payload["schedule"] = {
            k: v for k, v in schedule.items() if k in ("cron", "text", "timezone")
        }
    payload["targets"] = [
        {k: v for k, v in t.items() if k != "id"} if isinstance(t, dict) else t
        for t in targets
    ]
    urls: list[str] = []
    for target in targets:
        if isinstance(target, dict):
            found = target.get("urls") or [target.get("url")]
            urls += [u for u in found if isinstance(u, str) and u]
    if payload.get("notification") == {}:
        payload.pop("notification")
    return Planned(
        ref=ref,
        label=name or ref,
        urls=urls,
        payload=payload,
        paused=monitor.get("status") == "paused",
    )


def monitors_in(document: Any) -> list[Any] | None:
    """The monitors of a saved /v2/monitor answer: the list's envelope
    ({"success": true, "data": [...]}), one monitor's, or the bare list."""
    if isinstance(document, dict) and "data" in document:
        document = document["data"]
    if isinstance(document, dict) and isinstance(document.get("targets"), list):
        return [document]
    if isinstance(document, list) and all(
        isinstance(m, dict) and "targets" in m for m in document
    ):
        return document
    return None


class MonitorApi(Source):
    name = "firecrawl"
    label = "Firecrawl or another Pagewatch"
    steps = (
        "Give the service's address (https://api.firecrawl.dev, or another "
        "Pagewatch's) and an API key of the team whose monitors you move, or "
        "upload a file of its monitor list saved from its API."
    )
    reads_remote = True

    def read_file(self, data: bytes, filename: str = "") -> list[Planned]:
        monitors = monitors_in(load_json(data, "The file"))
        if monitors is None:
            raise ImportRefused(
                "The file holds no monitors as Firecrawl's monitor list gives "
                "them (each with its targets)."
            )
        return [
            planned_from_monitor(str(m.get("id") or f"monitor {i}"), m)
            for i, m in enumerate(monitors[: MAX_ITEMS + 1], start=1)
        ]

    def read_remote(
        self,
        url: str,
        api_key: str,
        progress: remote.Progress | None = None,
        bounds: remote.Bounds | None = None,
    ) -> list[Planned]:
        base = remote.base_url(url)
        base = base[: -len("/v2")] if base.endswith("/v2") else base
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        monitors: list[Any] = []
        # Page after page, each asked once the one before has answered.
        with remote.Reading("The monitor API", progress, bounds) as reading:
            while len(monitors) <= MAX_ITEMS:
                reading.at(len(monitors))
                page = reading.get_json(
                    f"{base}/v2/monitor?limit={PAGE}&offset={len(monitors)}", headers
                )
                data = page.get("data") if isinstance(page, dict) else None
                if not isinstance(data, list):
                    raise ImportRefused(
                        "The monitor API's answer has no list of monitors."
                    )
                monitors += data
                reading.count(len(monitors))
                if len(data) < PAGE:
                    break
        return [
            planned_from_monitor(str(m.get("id") if isinstance(m, dict) else i), m)
            for i, m in enumerate(monitors[: MAX_ITEMS + 1])
        ]


class PagewatchExport(Source):
    name = "pagewatch"
    label = "A Pagewatch export"
    # Shown to staff on the Import page: the command and the API that also
    # make this file are in the README, for those who use them.
    steps = (
        "On the Pagewatch the monitors come from, press “Export this team's "
        "monitors” at the top of its Import page, then upload the JSON file."
    )

    def read_file(self, data: bytes, filename: str = "") -> list[Planned]:
        document = load_json(data, "The file")
        if isinstance(document, dict) and isinstance(document.get("data"), dict):
            document = document["data"]  # as GET /v2/export answers it
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ImportRefused(
                "The file is not a Pagewatch export: upload the file Export gave."
            )
        monitors = document.get("monitors")
        if not isinstance(monitors, list):
            raise ImportRefused("The export holds no monitors.")
        return [
            planned_from_monitor(f"monitor {i}", m)
            for i, m in enumerate(monitors[: MAX_ITEMS + 1], start=1)
        ]
