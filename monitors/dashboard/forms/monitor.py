"""The monitor form (create and edit): the monitor's fields plus one row per
target.

The form parses what people type into the JSON shape of a monitor's edit
(what monitors.editing saves, as the /v2/monitor API does) and checks it
with the rules the API's serializers call, called directly
(monitors.dashboard.forms.checking); each problem's path finds its form
field and its plain words (monitors.dashboard.forms.words)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django import forms
from django.http import QueryDict

from monitors import clock
from monitors.dashboard.forms import words as form_words
from monitors.dashboard.forms.checking import EditCheck
from monitors.dashboard.forms.fields import (
    _CHANGE_SLOTS,
    _CROSS_FIELD_SLOTS,
    _EMAIL_SLOTS,
    _KEY,
    _MAIN_SLOTS,
    _PAGE_ORDER,
    _WEBHOOK_SLOTS,
    MAX_TARGET_ROWS,
    NON_FIELD,
    WEBHOOK_PAGES_INVALID,
    MonitorFields,
    _given,
    _items,
    _lines,
    _number,
    _pairs,
    _tags,
    monitor_initial,
    new_target_key,
    split_schedule,
)
from monitors.dashboard.forms.targets import TargetFields, _with_format, target_initial
from monitors.editing import create_monitor, update_monitor
from monitors.models import Channel, Monitor, Team
from monitors.rules_problems import Problem
from monitors.schedule import (
    ScheduleError,
    min_interval_words,
    normalize_schedule,
    normalize_timezone,
    timezone_hint,
)
from monitors.schedule_words import schedule_box_text
from monitors.target_kinds import FormField, TargetKind, all_kinds, kind_for


class MonitorForm:
    """The create/edit form: monitor fields plus one row per target.

    Bound forms read their rows from the posted `target` keys, in page order;
    `add_target`/`remove_target` (the no-JavaScript buttons) change the rows
    without validating.
    """

    def __init__(
        self,
        data: QueryDict | None = None,
        *,
        monitor: Monitor | None = None,
        team: Team | None = None,
        default_timezone: str | None = None,
    ) -> None:
        self.monitor = monitor
        self.team = team or (monitor.team if monitor else None)
        # A new monitor's schedule starts in the team's zone, as does one sent
        # with the zone left blank.
        self.default_timezone = default_timezone or (
            clock.team_zone(self.team) if self.team else "UTC"
        )
        self.data = data
        self.errors: dict[str, list[str]] = {}
        # The controls the schedule slot's errors are about (see is_valid).
        self.schedule_faults: list[str] = []
        self.validated_data: dict[str, Any] | None = None
        self._stored_targets = (
            {str(t.id): t for t in monitor.targets.all()} if monitor else {}
        )
        if data is None:
            if monitor is not None:
                self.main = self._main_fields(initial=monitor_initial(monitor))
                if monitor.zone_gone_words:
                    # Said where it is fixed, before anyone saves.
                    self.errors["schedule"] = [monitor.zone_gone_words]
                    self.schedule_faults = ["timezone"]
                    self.mark_invalid()
                self.targets = [
                    TargetFields(prefix=new_target_key(), initial=target_initial(t))
                    for t in self._stored_targets.values()
                ]
            else:
                initial = {"timezone": self.default_timezone}
                self.main = self._main_fields(initial=initial)
                if self.team is None or not self.team.time_zone:
                    # static/js/app.js swaps in the browser's zone for new
                    # monitors of a team that never picked one (UTC meanwhile).
                    widget = self.main.fields["timezone"].widget
                    widget.attrs["data-browser-timezone"] = ""
                self.targets = [self.blank_target(all_kinds()[0].name)]
            return
        self.main = self._main_fields(data)
        keys = [k for k in dict.fromkeys(data.getlist("target")) if _KEY.match(k)]
        self.targets = [TargetFields(data, prefix=k) for k in keys[:MAX_TARGET_ROWS]]

    def _main_fields(self, *args: Any, **kwargs: Any) -> MonitorFields:
        fields = MonitorFields(*args, **kwargs)
        team_channels = (
            Channel.objects.for_team(self.team).shared() if self.team else []
        )
        fields.fields["channels"].choices = [  # type: ignore[attr-defined]
            (str(channel.pk), channel.name) for channel in team_channels
        ]
        return fields

    @staticmethod
    def blank_target(kind: str, key: str | None = None) -> TargetFields:
        kind = kind if kind_for(kind) is not None else all_kinds()[0].name
        return TargetFields(prefix=key or new_target_key(), initial={"type": kind})

    @staticmethod
    def kinds() -> list[TargetKind]:
        """The kinds of target one can add (the "Add" buttons)."""
        return all_kinds()

    # -- rows without JavaScript ---------------------------------------------

    def change_rows(self, *, add: str | None = None, remove: str | None = None) -> None:
        """Apply an "add target"/"remove" button press (no validation)."""
        if remove:
            self.targets = [t for t in self.targets if t.key != remove]
        if add and kind_for(add) is not None:
            self.targets.append(self.blank_target(add))

    # -- validation -------------------------------------------------------------

    def is_valid(self) -> bool:
        if self.data is None:
            return False
        self.errors = {}
        self.schedule_faults = []
        payload = self.payload()
        webhook_pages = self._webhook_pages()
        checked = EditCheck(payload, monitor=self.monitor, team=self.team)
        for problem in checked.problems:
            slot, message = self._place(problem, payload)
            self.errors.setdefault(slot, []).append(message)
        if "schedule" in self.errors:
            self._explain_schedule(payload["schedule"])
        if self.errors:
            self.mark_invalid()
            return False
        # A dashboard-only choice next to the API's fields (monitors.editing).
        self.validated_data = checked.cleaned | {"webhookPages": webhook_pages}
        return True

    def _explain_schedule(self, schedule: dict[str, Any]) -> None:
        """Say which control each schedule problem is about.

        The phrase and its time zone share one error slot, as they share one
        object in the API, which reports a bad zone before looking at the
        phrase. A person fixes one control at a time: the zone is marked when
        it is the problem (not the phrase next to it), and a bad phrase is
        named as well while the zone is wrong, with the same rule.
        """
        try:
            normalize_timezone(schedule.get("timezone"))
        except ScheduleError:
            self.schedule_faults = ["timezone"]
        else:
            self.schedule_faults = ["schedule"]
            return
        try:
            normalize_schedule(schedule.get("cron"), schedule.get("text"), None)
        except ScheduleError as exc:
            message = form_words.schedule_problem(exc)
            if message not in self.errors["schedule"]:
                self.errors["schedule"].append(message)
            self.schedule_faults.insert(0, "schedule")

    def controls_for(self, slot: str) -> list[str] | None:
        """The ids of the controls an error slot's messages are about, when
        that is not every control it describes (None: all of them)."""
        if slot != "schedule" or not self.schedule_faults:
            return None
        return [self.main[name].id_for_label for name in self.schedule_faults]

    def save(self, team: Team, now: datetime, by: str = "") -> Monitor:
        """`by`: who is saving, by name (editing.create_monitor)."""
        assert self.validated_data is not None, "call is_valid() first"
        if self.monitor is None:
            return create_monitor(team, self.validated_data, now, by=by)
        return update_monitor(self.monitor, self.validated_data, now, by=by)

    # -- building the API payload -------------------------------------------

    def payload(self) -> dict[str, Any]:
        """The /v2/monitor body this form stands for (parse errors recorded)."""
        main = self._cleaned(self.main)
        cron, text = self._schedule_box(main.get("schedule", ""))
        schedule: dict[str, Any] = {
            "timezone": main.get("timezone") or self.default_timezone
        }
        if cron is not None:
            schedule["cron"] = cron
        if text is not None:
            schedule["text"] = text
        payload: dict[str, Any] = {
            "name": main.get("name", ""),
            "tags": _tags(main.get("tags", "")),
            "schedule": schedule,
            "targets": [self._target_payload(t) for t in self.targets],
            "goal": main.get("goal", ""),
            "ignoreLines": _lines(main.get("ignore_lines", "")),
            "changeRules": {
                "lines": main.get("change_lines") or "any",
                "containing": _lines(main.get("change_containing", "")),
                "appears": main.get("change_appears", ""),
                "disappears": main.get("change_disappears", ""),
            },
            "fetchWith": main.get("fetch_with") or Monitor.FetchWith.AUTO,
            "webhook": self._webhook_payload(main),
            "notification": self._notification_payload(main),
            "channels": [
                int(pk) for pk in main.get("channels") or [] if str(pk).isdecimal()
            ],
        }
        judge = main.get("judge")
        if judge in ("on", "off"):
            payload["judgeEnabled"] = judge == "on"
        if str(main.get("retention_days", "")).strip():
            payload["retentionDays"] = _number(main["retention_days"])
        return payload

    def _schedule_box(self, typed: str) -> tuple[str | None, str | None]:
        """(cron, text) for the schedule box. The box shows a stored schedule
        in words; saved untouched, the schedule stays as it was written
        (`MON-FRI` does not become `1-5` behind an API client's back)."""
        if self.monitor is not None and typed.strip() == schedule_box_text(
            self.monitor.schedule
        ):
            return self.monitor.schedule_cron, None
        return split_schedule(typed)

    def _cleaned(self, form: forms.Form) -> dict[str, Any]:
        form.is_valid()
        return {
            **{name: form[name].value() for name in form.fields},
            **form.cleaned_data,
        }

    def _parse_error(self, slot: str, problems: Iterable[str]) -> None:
        for problem in problems:
            self.errors.setdefault(slot, []).append(problem)

    def _target_payload(self, row: TargetFields) -> dict[str, Any]:
        """The row's API object: its kind's controls, each at its key path;
        in the objects its kind keeps (scrapeOptions...), the keys the form
        does not show stay as stored (set through the API)."""
        data = self._cleaned(row)
        kind = row.target_kind
        stored = self._stored_targets.get(data.get("id") or "")
        target: dict[str, Any] = {"type": data.get("type") or ""}
        if stored is not None:
            target["id"] = str(stored.id)
        shape = kind.represent(stored) if stored is not None else {}
        for name in kind.kept_objects:
            target[name] = dict(shape.get(name) or {})
        for spec in kind.form_fields:
            value = self._parsed(row, spec, data[spec.name])
            *parents, key = spec.path
            place = target
            for parent in parents:
                place = place.setdefault(parent, {})
            current = place.pop(key, None)
            if spec.shape == "format":
                if formats := _with_format(current, spec.format, value):
                    place[key] = formats
            elif spec.always:
                place[key] = (
                    value if _given(value) or not spec.initial else spec.initial
                )
            elif spec.shape == "check":
                if value != spec.initial:
                    place[key] = value
            elif _given(value):
                place[key] = value
        return target

    def _parsed(self, row: TargetFields, spec: FormField, typed: Any) -> Any:
        """What a control's text is in JSON (parse problems recorded)."""
        if spec.shape in ("check", "format"):
            return bool(typed)
        text = "" if typed is None else str(typed)
        if spec.shape == "lines":
            return _lines(text)
        if spec.shape == "items":
            return _items(text)
        if spec.shape == "number":
            return _number(text) if text.strip() else ""
        if spec.shape == "pairs":
            pairs, problems = _pairs(text, spec.label, "Name: value")
            self._parse_error(row.slot(spec.name), problems)
            return pairs
        if spec.shape == "choice":
            return text
        return text.strip()

    def _webhook_payload(self, main: dict[str, Any]) -> dict[str, Any] | None:
        headers, header_problems = _pairs(
            main.get("webhook_headers", ""), "Extra headers", "Name: value"
        )
        metadata, metadata_problems = _pairs(
            main.get("webhook_metadata", ""), "Metadata", "key: value"
        )
        self._parse_error("webhook_headers", header_problems)
        self._parse_error("webhook_metadata", metadata_problems)
        url = (main.get("webhook_url") or "").strip()
        if not url and not headers and not metadata:
            return None
        return {
            "url": url,
            "events": list(main.get("webhook_events") or []),
            "headers": headers,
            "metadata": metadata,
        }

    def _webhook_pages(self) -> str:
        """Which pages get page events: not part of the API body (the API
        keeps Firecrawl's every page), so checked here."""
        value = self.main["webhook_pages"].value() or Monitor.WebhookPages.ALL
        if value not in Monitor.WebhookPages.values:
            self._parse_error("webhook_pages", [WEBHOOK_PAGES_INVALID])
        return value

    def _notification_payload(self, main: dict[str, Any]) -> dict[str, Any]:
        # Other channels (set through the API) are kept as they are.
        stored = dict(self.monitor.notification or {}) if self.monitor else {}
        stored["email"] = {
            "enabled": bool(main.get("email_enabled")),
            "recipients": _items(main.get("email_recipients", "")),
            "includeDiffs": bool(main.get("email_include_diffs")),
        }
        return stored

    # -- errors -------------------------------------------------------------------

    def _place(self, issue: Problem, payload: dict[str, Any]) -> tuple[str, str]:
        """(slot, message) for one problem, in the form's words."""
        path = issue.path
        if not path:
            return NON_FIELD, form_words.plain("", issue)
        head = path[0]
        if head == "webhook":
            slot = _WEBHOOK_SLOTS.get(
                str(path[1]) if len(path) > 1 else "", "webhook_url"
            )
            return slot, form_words.plain(slot, issue)
        if head == "notification":
            inner = [p for p in path[1:] if p != "email"]
            slot = _EMAIL_SLOTS.get(str(inner[0]) if inner else "", "email_recipients")
            message = form_words.plain(slot, issue)
            return slot, self._with_item(path, message, payload)
        if head == "changeRules":
            inner = str(path[1]) if len(path) > 1 else "lines"
            slot = _CHANGE_SLOTS.get(inner, "change_lines")
            message = form_words.plain(slot, issue)
            return slot, self._with_item(path, message, payload)
        if head == "ignoreLines":
            message = form_words.plain("ignore_lines", issue)
            return "ignore_lines", self._with_item(path, message, payload)
        if head == "targets" and len(path) > 1 and isinstance(path[1], int):
            return self._place_on_row(path[1], issue, payload)
        slot = _MAIN_SLOTS.get(str(head), NON_FIELD)
        if slot == "schedule":
            zone = payload["schedule"].get("timezone", "")
            typed = {
                "zone": zone,
                "hint": timezone_hint(zone),
                "unit": min_interval_words(),
            }
            return slot, form_words.plain(slot, issue, typed)
        return slot, form_words.plain(slot, issue)

    def _place_on_row(
        self, index: int, issue: Problem, payload: dict[str, Any]
    ) -> tuple[str, str]:
        path, message = issue.path, issue.message
        if index >= len(self.targets):
            return "targets", form_words.plain("targets", issue)
        row = self.targets[index]
        rest = tuple(str(p) for p in path[2:] if not isinstance(p, int))
        field = row.slot_for(rest)
        if field is None:
            # An option the form does not show was set through the API: it
            # is named as the API names it, since that is where it is fixed.
            where = ".".join(rest)
            return row.key, f"{where}: {message}" if where else message
        message = form_words.plain(field, issue)
        return row.slot(field), self._with_item(path, message, payload)

    @staticmethod
    def _with_item(path: tuple[str | int, ...], message: str, payload: Any) -> str:
        """Name the line an error is about ("…/x": message) for list fields."""
        if not isinstance(path[-1], int):
            return message
        value = payload
        try:
            for part in path:
                value = value[part]
        except (KeyError, IndexError, TypeError):
            return message
        if not isinstance(value, str):
            return message
        if f"“{value.strip()[:60]}”" in message:
            return message  # it names the line already ("“x” is not a web address")
        shown = value if len(value) <= 80 else value[:77] + "…"
        return f"“{shown}”: {message}"

    # -- what the template needs ------------------------------------------------

    def slots(self) -> list[str]:
        """Every error slot on the page, so a validation response can clear them."""
        names = [NON_FIELD, "targets", *MonitorFields.base_fields]
        names.remove("timezone")  # shares the schedule's slot
        for row in self.targets:
            names.append(row.key)
            names.extend(row.slot(name) for name in row.shown_fields())
        return names

    def visible_errors(self, touched: set[str] | None) -> dict[str, list[str]]:
        """Errors for the fields a person has touched (all when `touched` is None)."""
        if touched is None:
            return self.errors
        slots = {"schedule" if name == "timezone" else name for name in touched}
        row_keys = {name.split("-", 1)[0] for name in touched if "-" in name}
        slots |= row_keys
        if row_keys or slots & {"goal", "judge"}:
            slots |= _CROSS_FIELD_SLOTS
        slots.add(NON_FIELD)
        return {slot: msgs for slot, msgs in self.errors.items() if slot in slots}

    def error_count(self) -> int:
        return sum(len(messages) for messages in self.errors.values())

    def error_summary(self) -> list[tuple[str, str]]:
        """(anchor, message) pairs for the summary at the top of a submitted
        form; each anchor is the control to fix."""
        keys = {row.key for row in self.targets}
        anchors = {
            NON_FIELD: "main",
            "targets": "targets",
            "judge": "id_judge_0",
            "change_lines": "id_change_lines_0",
            "webhook_events": "id_webhook_events_0",
            "webhook_pages": "id_webhook_pages_0",
        }
        pairs = []
        for slot in sorted(self.errors, key=self._page_position):
            anchor = anchors.get(slot) or (
                f"target-{slot}" if slot in keys else f"id_{slot}"
            )
            pairs.extend((anchor, message) for message in self.errors[slot])
        return pairs

    def _page_position(self, slot: str) -> tuple[int, int, int]:
        """Where a slot's field stands on the page, so the summary reads in
        the order people meet the fields: target rows where "targets" is."""
        for index, row in enumerate(self.targets):
            if slot == row.key or slot.startswith(f"{row.key}-"):
                fields = [row.slot(name) for name in row.shown_fields()]
                inner = fields.index(slot) + 1 if slot in fields else 0
                return _PAGE_ORDER.index("targets"), index + 1, inner
        if slot in _PAGE_ORDER:
            return _PAGE_ORDER.index(slot), 0, 0
        return len(_PAGE_ORDER), 0, 0

    def mark_invalid(self) -> None:
        """aria-invalid on the controls whose slot has an error."""
        for slot in self.errors:
            if slot == "schedule":
                for name in self.schedule_faults:
                    self.main.fields[name].widget.attrs["aria-invalid"] = "true"
                continue
            form, name = self.main, slot
            if "-" in slot:
                key, name = slot.split("-", 1)
                form = next((t for t in self.targets if t.key == key), None)
            if form is not None and name in form.fields:
                form.fields[name].widget.attrs["aria-invalid"] = "true"
                if isinstance(form, TargetFields) and form.is_advanced(name):
                    # Shown unfolded, without JavaScript too.
                    form.advanced_invalid = True
