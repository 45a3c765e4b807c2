"""changedetection.io: its backup zip (the Backups page) and its REST API
(/api/v1/watch with the x-api-key header).

A backup holds the datastore (changedetection.json, url-watches.json in older
releases) with `watching` {uuid: watch} and `settings`, one folder per watch
(its watch.json, when the release keeps one, wins over the datastore's copy)
with history.txt ("timestamp,snapshot file" lines) and the snapshots, plain
text or Brotli (.txt.br)."""

from __future__ import annotations

import math
import posixpath
import re
import sys
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import re2

from monitors import rules, rules_changes
from monitors.moving import remote
from monitors.moving.archive import DamagedEntry, SafeZip
from monitors.moving.base import (
    DATASTORES,
    MAX_ITEMS,
    Baseline,
    Draft,
    ImportRefused,
    JsonRefused,
    Planned,
    Source,
    is_datastore,
    load_json,
    not_imported,
    split_tags,
)
from monitors.moving.lists import Lists

_XPATH_PREFIXES = ("xpath:", "xpath1:", "/", "(")
_JSON_PREFIXES = ("json:", "jq:", "jqraw:")
_BROWSER_BACKENDS = ("html_webdriver",)
_CHANGE_KINDS = ("added", "removed", "replaced")
# Snapshots kept as first baselines, in all: an import keeps its preview in
# the database until confirmed, so a backup's history cannot all go there.
BASELINES_MAX_BYTES = 64 * 1024 * 1024


_UNIT_SECONDS = {"weeks": 604800, "days": 86400, "hours": 3600, "minutes": 60,
                 "seconds": 1}  # fmt: skip


def _seconds(spec: Any, notes: list[str] | None = None) -> float | None:
    """changedetection.io's {"hours": 3, "minutes": 30, ...} in seconds (None:
    no interval); with `notes`, a part in a unit it never writes is named."""
    if not isinstance(spec, dict):
        return None
    total = 0.0
    for unit, value in spec.items():
        try:
            number = float(value) if not isinstance(value, bool) else 0.0
        except (TypeError, ValueError):
            number = 0.0
        if not math.isfinite(number) or number <= 0:
            continue
        if unit in _UNIT_SECONDS:
            total += number * _UNIT_SECONDS[unit]
        elif notes is not None:
            notes.append(
                f"Its check interval's “{str(value)[:20]} {str(unit)[:20]}” is "
                "not imported: Pagewatch does not know that unit."
            )
    if not math.isfinite(total):
        # Parts each finite can still add up past a float ("1e308 weeks"):
        # the longest interval there is, which the schedule caps at a week.
        return sys.float_info.max
    return total or None


def _text_list(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if str(v).strip()]


def _tag_names(watch: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    known = ((settings.get("application") or {}).get("tags")) or {}
    names = []
    for tag in watch.get("tags") or []:
        entry = known.get(tag) if isinstance(known, dict) else None
        title = entry.get("title") if isinstance(entry, dict) else None
        names.append(str(title or tag))
    old = watch.get("tag")
    if isinstance(old, str):
        names += split_tags(old)
    return names


def draft_of(
    uuid: str, watch: dict[str, Any], settings: dict[str, Any]
) -> Draft | Planned:
    """A changedetection.io watch in Pagewatch's terms, every setting that has
    no equal here named in the notes."""
    url = str(watch.get("url") or "").strip()
    title = str(watch.get("title") or "").strip()
    if not url:
        return not_imported(uuid, title, [], "It has no URL.")
    if "{%" in url or "{{" in url:
        return not_imported(
            uuid,
            title,
            [url],
            "Its address is a template changedetection.io fills in (with {% %} "
            "or {{ }}), which Pagewatch does not: add it by hand with a fixed "
            "address.",
        )
    notes: list[str] = []
    draft = Draft(ref=uuid, url=url, name=title, notes=notes)
    draft.tags = _tag_names(watch, settings)
    draft.paused = bool(watch.get("paused"))
    requests = settings.get("requests") or {}
    if watch.get("time_between_check_use_default", True) is not False:
        draft.interval_seconds = _seconds(requests.get("time_between_check"), notes)
    else:
        draft.interval_seconds = _seconds(watch.get("time_between_check"), notes)
    if draft.interval_seconds is None:
        draft.interval_seconds = _seconds(watch.get("time_between_check"))
    _filters(watch, draft)
    _ignored_lines(watch, settings, draft)
    _change_rules(watch, draft)
    backend = str(watch.get("fetch_backend") or "system")
    if backend == "system":
        backend = str((settings.get("application") or {}).get("fetch_backend") or "")
    draft.browser = backend in _BROWSER_BACKENDS or backend.startswith("extra_browser")
    _headers(watch.get("headers"), draft)
    _notification_urls(watch, settings, draft)
    _overriding_tags(watch, settings, draft)
    _intent(watch, draft)
    _leftovers(watch, draft)
    return draft


def _notification_urls(
    watch: dict[str, Any], settings: dict[str, Any], draft: Draft
) -> None:
    """The Apprise URLs changedetection.io notifies for the watch: its own,
    else those of its tags, else the system-wide ones, as it picks them."""
    application = settings.get("application") or {}
    known = application.get("tags") or {}
    tags = [
        known.get(tag) if isinstance(known, dict) else None
        for tag in watch.get("tags") or []
    ]
    for urls in (
        _text_list(watch.get("notification_urls")),
        [
            u
            for t in tags
            if isinstance(t, dict)
            for u in _text_list(t.get("notification_urls"))
        ],
        _text_list(application.get("notification_urls")),
    ):
        if urls:
            break
    if watch.get("notification_muted"):
        draft.muted = True
        draft.notes.append(
            "Its notifications were muted there: it comes with them muted until "
            "you unmute it on its page."
        )
    draft.notify_urls = urls


def _overriding_tags(
    watch: dict[str, Any], settings: dict[str, Any], draft: Draft
) -> None:
    """A tag set to override its watches' settings changed them there; only
    the watch's own settings (and the tag's notification URLs) come here."""
    known = (settings.get("application") or {}).get("tags") or {}
    for tag in watch.get("tags") or []:
        entry = known.get(tag) if isinstance(known, dict) else None
        if isinstance(entry, dict) and entry.get("overrides_watch"):
            draft.notes.append(
                f"The group “{entry.get('title') or tag}” overrides its watches' "
                "settings there; those settings of the group were not imported, "
                "only the watch's own."
            )


def _intent(watch: dict[str, Any], draft: Draft) -> None:
    """changedetection.io's AI intent ("what I care about") is what a goal
    is here: the judge decides from it which changes matter."""
    intent = str(watch.get("llm_intent") or "").strip()
    if len(intent) > rules.GOAL_MAX:
        draft.notes.append(
            f"Its AI intent is cut to {rules.GOAL_MAX:,} characters, the longest "
            "goal Pagewatch takes."
        )
        intent = intent[: rules.GOAL_MAX]
    draft.goal = intent or None


def _filters(watch: dict[str, Any], draft: Draft) -> None:
    for key, into, what in (
        ("include_filters", draft.include_tags, "filter"),
        ("subtractive_selectors", draft.exclude_tags, "element to remove"),
    ):
        for selector in _text_list(watch.get(key)):
            if selector.startswith(_JSON_PREFIXES):
                draft.notes.append(
                    f"JSON {what} “{selector}” not imported, because Pagewatch "
                    "compares a page's text, not a path into JSON."
                )
            elif selector.startswith(_XPATH_PREFIXES):
                draft.notes.append(
                    f"XPath {what} “{selector}” not imported, because Pagewatch "
                    "selects parts of pages with CSS selectors only."
                )
            elif rules.css_selector_error(selector):
                draft.notes.append(
                    f"CSS {what} “{selector}” not imported, because Pagewatch "
                    "cannot read that selector."
                )
            else:
                into.append(selector)


def _ignored_lines(
    watch: dict[str, Any], settings: dict[str, Any], draft: Draft
) -> None:
    application = settings.get("application") or {}
    entries = _text_list(watch.get("ignore_text"))
    entries += _text_list(application.get("global_ignore_text"))
    for entry in entries:
        problem = rules.ignore_line_error(entry)
        if problem:
            draft.notes.append(f"Ignored text “{entry[:80]}” not imported: {problem}")
        else:
            draft.ignore_lines.append(entry)
    globally = _text_list(application.get("global_subtractive_selectors"))
    for selector in globally:
        if not selector.startswith(_XPATH_PREFIXES) and not rules.css_selector_error(
            selector
        ):
            draft.exclude_tags.append(selector)


# changedetection.io's own way of writing a pattern: /.../ with flags after.
_PERL_STYLE = re.compile(r"^/(.+)/([a-z]*)$", re.DOTALL)
# Its texts to watch for, as Pagewatch's change rules take them: the key, how
# the notes name it, the rule it becomes, and how that rule differs.
_WATCHED_TEXTS = (
    (
        "trigger_text",
        "Trigger text",
        "appears",
        "now tells when one of them appears on the page (changedetection.io told "
        "of every change while one was there)",
    ),
    (
        "text_should_not_be_present",
        "Text that should not be present",
        "disappears",
        "now tells when one of them disappears from the page (changedetection.io "
        "told of every change while none was there)",
    ),
)


def _pattern_part(entry: str) -> tuple[str, bool] | str:
    """(an RE2 pattern, whether it ignores case) for one of
    changedetection.io's texts or patterns (/price/i), or why it cannot be
    used. Its texts and its patterns without flags ignore case."""
    pattern = _PERL_STYLE.match(entry)
    if pattern is None:
        return re2.escape(entry.strip()), True
    body, flags = pattern.groups()
    if set(flags) - set("ims"):
        return f"Pagewatch's patterns take no “{flags}” flags."
    flags = flags or "i"
    other = flags.replace("i", "")
    return (f"(?{other}:{body})" if other else body), "i" in flags


def _rule_text(entries: list[str]) -> tuple[str | None, str]:
    """(the change rules' text, "") for changedetection.io's list of texts or
    patterns, any one of which counts: one pattern, whatever case unless a
    pattern's flags say otherwise; or (None, why it cannot be used)."""
    if len(entries) == 1 and _PERL_STYLE.match(entries[0]) is None:
        text = entries[0]  # a text is matched whatever its case here too
    else:
        parts = []
        for entry in entries:
            part = _pattern_part(entry)
            if isinstance(part, str):
                return None, f"“{entry[:80]}”: {part}"
            parts.append(part)
        if all(insensitive for _, insensitive in parts):
            joined = "|".join(body for body, _ in parts)
            text = f"/(?i)(?:{joined})/" if len(parts) > 1 else f"/(?i){joined}/"
        else:
            joined = "|".join(
                f"(?i:{body})" if insensitive else f"(?:{body})"
                for body, insensitive in parts
            )
            text = f"/{joined}/"
    problem = rules_changes.text_error(text)
    return (None, problem) if problem else (text, "")


def _change_rules(watch: dict[str, Any], draft: Draft) -> None:
    """Its settings of which changes count, as the monitor's change rules.

    changedetection.io counts a change only while one of its trigger texts
    is on the page and none of its texts that should not be present is (it
    blocks the others), and can leave added, removed or changed ("replaced")
    lines out of what it compares. Pagewatch tells when a text appears or
    disappears, and of either when both are set: the notes say so."""
    changes: dict[str, Any] = {}
    kept = {
        kind: watch.get(f"filter_text_{kind}", True) is not False
        for kind in _CHANGE_KINDS
    }
    if kept["added"] != kept["removed"]:
        changes["lines"] = "added" if kept["added"] else "removed"
        if not kept["replaced"]:
            draft.notes.append(
                f"Telling only of {changes['lines']} lines is imported; a changed "
                f"line counts as {changes['lines']} here too (changedetection.io "
                "left changed lines out)."
            )
    elif not kept["added"]:
        draft.notes.append(
            "Telling only of changed lines not imported: Pagewatch counts a "
            "changed line as one removed and one added, so it tells of every "
            "change."
        )
    elif not kept["replaced"]:
        draft.notes.append(
            "Leaving changed lines out not imported: Pagewatch counts a changed "
            "line as one removed and one added, so it tells of them too."
        )
    for key, words, rule, how in _WATCHED_TEXTS:
        entries = _text_list(watch.get(key))
        if not entries:
            continue
        shown = ", ".join(f"“{entry[:80]}”" for entry in entries)
        text, problem = _rule_text(entries)
        if text is None:
            draft.notes.append(f"{words} {shown} not imported: {problem}")
        else:
            changes[rule] = text
            draft.notes.append(f"{words} {shown} {how}.")
    if changes.get("appears") and changes.get("disappears"):
        draft.notes.append(
            "Trigger text and text that should not be present: Pagewatch tells "
            "when either happens (changedetection.io told only while both held)."
        )
    draft.change_rules = rules_changes.clean(changes)


def _headers(headers: Any, draft: Draft) -> None:
    for name, value in (headers or {}).items() if isinstance(headers, dict) else []:
        name, value = str(name), str(value)
        problem = rules.header_name_error(name) or rules.header_value_error(name, value)
        if problem:
            draft.notes.append(f"Request header not imported: {problem}")
        else:
            draft.headers[name] = value


def _leftovers(watch: dict[str, Any], draft: Draft) -> None:
    """Settings with no equal here, each named."""
    notes = draft.notes
    steps = [
        s
        for s in watch.get("browser_steps") or []
        if isinstance(s, dict) and s.get("operation") not in (None, "", "Choose one")
    ]
    if steps:
        notes.append(
            f"{len(steps)} browser step{'s' if len(steps) > 1 else ''} not "
            "imported, because Pagewatch's page "
            "actions are written differently: add them as actions by hand."
        )
    if watch.get("processor") == "restock_diff":
        notes.append(
            "Restock and price detection not imported, because Pagewatch has no "
            "such processor: the page's text is compared instead (a goal can say "
            "what matters)."
        )
    if _text_list(watch.get("extract_text")):
        notes.append(
            "Text to extract not imported, because Pagewatch compares the whole "
            "selected text (say in a goal what matters)."
        )
    method = str(watch.get("method") or "GET").upper()
    if method != "GET" or watch.get("body"):
        notes.append(
            f"Request method {method} and body not imported, because Pagewatch "
            "fetches pages with GET."
        )
    if watch.get("proxy"):
        notes.append("Proxy not imported, because Pagewatch fetches directly.")
    for key, words in (
        ("remove_duplicate_lines", "Removing duplicate lines"),
        ("sort_text_alphabetically", "Sorting lines"),
        ("check_unique_lines", "Only new lines"),
    ):
        if watch.get(key):
            notes.append(f"{words} not imported, because Pagewatch has no equal.")
    if _text_list(watch.get("extract_lines_containing")):
        notes.append(
            "Keeping only lines containing some text not imported, because "
            "Pagewatch compares the whole selected text (say in a goal what "
            "matters)."
        )
    limit = watch.get("time_schedule_limit")
    if isinstance(limit, dict) and limit.get("enabled"):
        notes.append(
            "Its checking hours (days and times) not imported: it is checked "
            "around the clock (a schedule can name days and times)."
        )
    if watch.get("conditions"):
        notes.append(
            "Its conditions not imported, because Pagewatch has no equal (say "
            "in a goal what matters)."
        )
    if watch.get("notification_title") or watch.get("notification_body"):
        notes.append(
            "Its own notification title and text not imported: Pagewatch's "
            "channels write their messages themselves."
        )
    if str(watch.get("webdriver_js_execute_code") or "").strip():
        notes.append(
            "JavaScript to run before reading the page not imported: add it as a "
            "page action by hand."
        )
    if watch.get("ignore_status_codes"):
        notes.append(
            "Ignoring error status codes not imported: a page that answers with "
            "an error is a failed check here."
        )
    if str(watch.get("llm_change_summary") or "").strip():
        notes.append(
            "Its AI change summary prompt not imported: Pagewatch's judge writes "
            "its own summary of each change."
        )


def _snapshot_time(stamp: str) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(float(stamp)), tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None


class ChangedetectionBackup:
    """One opened backup: a zip, or its datastore uploaded alone (then
    without snapshots)."""

    def __init__(
        self, data: Any, name: str, archive: SafeZip | None = None, root: str = ""
    ) -> None:
        self.archive = archive
        self.root = root
        if isinstance(data, dict) and "watching" not in data and "settings" in data:
            raise ImportRefused(
                f"{name} holds only changedetection.io's settings: since version "
                "0.53 it keeps each watch in a folder of its own. Upload the whole "
                "backup zip."
            )
        if not isinstance(data, dict) or "watching" not in data:
            raise ImportRefused(
                f"{name} holds no watches: it is not a changedetection.io backup "
                "(its changedetection.json or url-watches.json)."
            )
        watching = data.get("watching") or {}
        self.settings = data.get("settings") or {}
        if not isinstance(watching, dict) or not isinstance(self.settings, dict):
            raise ImportRefused("The datastore's watches are not in the usual shape.")
        self.watching: dict[str, Any] = dict(watching)
        # Watches whose own file in the zip cannot be read, and why.
        self.unreadable: dict[str, str] = {}
        self.baseline_bytes = 0

    @classmethod
    def of_zip(cls, archive: SafeZip) -> ChangedetectionBackup:
        store = next(filter(None, (archive.find(n) for n in DATASTORES)), None)
        if store is None:
            raise ImportRefused(
                "The zip holds no changedetection.json or url-watches.json: it is "
                "not a changedetection.io backup."
            )
        name = posixpath.basename(store)
        root = posixpath.dirname(store)
        data = load_json(archive.read(store), name)
        # Beside the datastore, one folder per watch (watch.json) and, since
        # 0.53, per tag (tag.json); 0.53's datastore keeps only the settings.
        found: dict[str, dict[str, str]] = {"watch.json": {}, "tag.json": {}}
        for entry in archive.names():
            folder, file = posixpath.split(entry)
            if file in found and posixpath.dirname(folder) == root:
                found[file][posixpath.basename(folder)] = entry
        if isinstance(data, dict) and "watching" not in data and found["watch.json"]:
            data = {**data, "watching": {}}
        backup = cls(data, name, archive, root)
        for uuid, entry in found["watch.json"].items():
            watch = backup.entry_json(entry, f"{uuid}/watch.json")
            if isinstance(watch, dict):
                backup.watching[uuid] = {**(backup.watching.get(uuid) or {}), **watch}
            elif isinstance(watch, str) and uuid not in backup.watching:
                backup.unreadable[uuid] = watch
        tags = backup.known_tags()
        for uuid, entry in found["tag.json"].items():
            tag = backup.entry_json(entry, f"{uuid}/tag.json")
            if isinstance(tag, dict):
                tags[uuid] = {**(tags.get(uuid) or {}), **tag}
        return backup

    def entry_json(self, entry: str, what: str) -> Any:
        """A JSON file of the backup, or why it cannot be read (a str): one
        damaged watch costs only itself, not the whole backup."""
        assert self.archive is not None
        try:
            data = self.archive.read(entry)  # past the archive's caps: refused
            return load_json(data, what)
        except (DamagedEntry, JsonRefused) as exc:
            return exc.message

    def known_tags(self) -> dict[str, Any]:
        """The settings' tags by uuid, made a dict of their own to add to."""
        application = self.settings.setdefault("application", {})
        if not isinstance(application, dict):
            application = self.settings["application"] = {}
        tags = application.get("tags")
        application["tags"] = dict(tags) if isinstance(tags, dict) else {}
        return application["tags"]

    def _path(self, *parts: str) -> str:
        return (
            posixpath.join(self.root, *parts) if self.root else posixpath.join(*parts)
        )

    def last_snapshot(self, uuid: str, url: str, notes: list[str]) -> list[Baseline]:
        if self.archive is None:
            return []
        history = self._path(uuid, "history.txt")
        if history not in self.archive.names():
            return []
        try:
            lines = self.archive.read(history).decode("utf-8", "replace").splitlines()
            entries = [line.split(",", 1) for line in lines if "," in line]
            if not entries:
                return []
            stamp, file = entries[-1]
            name = posixpath.basename(file.strip().replace("\\", "/"))
            snapshot = self._path(uuid, name)
            if snapshot not in self.archive.names():
                notes.append("Its last snapshot is missing from the backup: none kept.")
                return []
            text = self.archive.read(snapshot).decode("utf-8", "replace")
        except DamagedEntry:
            notes.append(
                "Its last snapshot is damaged in the backup: none kept. Its first "
                "check here calls the page new."
            )
            return []
        self.baseline_bytes += len(text)
        if self.baseline_bytes > BASELINES_MAX_BYTES:
            notes.append(
                "Its last snapshot is not kept: the backup's snapshots pass "
                f"{BASELINES_MAX_BYTES // 2**20} MB, the most one import keeps. "
                "Its first check here calls the page new."
            )
            return []
        return [Baseline(url=url, text=text, taken_at=_snapshot_time(stamp))]

    def planned(self) -> list[Planned]:
        items = []
        for uuid, watch in list(self.watching.items())[: MAX_ITEMS + 1]:
            if not isinstance(watch, dict):
                items.append(not_imported(str(uuid), "", [], "Not a watch."))
                continue
            draft = draft_of(str(uuid), watch, self.settings)
            if isinstance(draft, Draft):
                draft.baselines = self.last_snapshot(str(uuid), draft.url, draft.notes)
                items.append(draft.plan())
            else:
                items.append(draft)
        for uuid, problem in self.unreadable.items():
            items.append(not_imported(uuid, "", [], f"It cannot be read: {problem}"))
        return items


def _from_url_list(data: bytes) -> list[Planned]:
    """A backup that kept only its list of addresses: one monitor per URL."""
    items = Lists().read_file(data, "url-list.txt")
    for item in items:
        item.notes.append(
            "The backup holds only its list of addresses: filters, schedules "
            "and snapshots of this watch were not in it."
        )
    return items


class Changedetection(Source):
    name = "changedetection"
    label = "changedetection.io"
    steps = (
        "Download a backup from changedetection.io's Backups page and upload the "
        "zip as it is, or give its address and an API key (Settings → API)."
    )
    reads_remote = True

    def read_file(self, data: bytes, filename: str = "") -> list[Planned]:
        if is_datastore(data):
            name = posixpath.basename(filename) or DATASTORES[0]
            return ChangedetectionBackup(load_json(data, name), name).planned()
        archive = SafeZip(data)
        if not any(archive.find(name) for name in DATASTORES):
            listed = archive.find("url-list.txt")
            if listed is not None:
                return _from_url_list(archive.read(listed))
        return ChangedetectionBackup.of_zip(archive).planned()

    def read_remote(
        self,
        url: str,
        api_key: str,
        progress: remote.Progress | None = None,
        bounds: remote.Bounds | None = None,
    ) -> list[Planned]:
        base = remote.base_url(url)
        headers = {"x-api-key": api_key, "Accept": "application/json"}
        with remote.Reading("changedetection.io", progress, bounds) as reading:
            try:
                listed = reading.get_json(f"{base}/api/v1/watch", headers)
            except remote.NotFound:
                raise ImportRefused(
                    f"There is no changedetection.io API at {base[:200]} (it "
                    "answered HTTP 404 for its list of watches): check the address."
                ) from None
            if not isinstance(listed, dict):
                raise ImportRefused("changedetection.io's watch list is not an object.")
            reading.count(len(listed))
            try:
                tags = reading.get_json(f"{base}/api/v1/tags", headers)
            except ImportRefused:
                tags = {}  # releases before tags had no such endpoint
            settings = {"application": {"tags": tags if isinstance(tags, dict) else {}}}

            async def watch_of(uuid: str) -> Planned:
                path = f"{base}/api/v1/watch/{quote(uuid, safe='')}"
                return await _read_watch(reading, path, uuid, headers, settings)

            uuids = [str(uuid) for uuid in list(listed)[: MAX_ITEMS + 1]]
            return reading.each(uuids, watch_of)


async def _read_watch(
    reading: remote.Reading,
    path: str,
    uuid: str,
    headers: dict[str, str],
    settings: dict[str, Any],
) -> Planned:
    """One watch of a changedetection.io, with its latest snapshot."""
    try:
        watch = await reading.aget_json(path, headers)
    except remote.NotFound:
        # Removed there between the list and now: only it is missed.
        return not_imported(
            uuid,
            "",
            [],
            "It was removed from changedetection.io while it was being read.",
        )
    if not isinstance(watch, dict):
        return not_imported(uuid, "", [], "Not a watch.")
    draft = draft_of(uuid, watch, settings)
    if not isinstance(draft, Draft):
        return draft
    status, body = await reading.aget(f"{path}/history/latest", headers)
    if status == 200 and body:
        taken = _snapshot_time(str(watch.get("last_changed") or ""))
        draft.baselines = [Baseline(draft.url, body.decode("utf-8", "replace"), taken)]
    return draft.plan()
