"""Editing a monitor in the admin: the dashboard's own form (monitors.dashboard.forms)
laid out for the admin, so the same rules refuse the same input with the same
words and the same workflow (monitors.editing) saves it. Header values stay
masked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.http import QueryDict
from django.utils import timezone

from monitors import clock, rules
from monitors.admin.shared import _masked
from monitors.dashboard.forms.monitor import MonitorForm
from monitors.dashboard.forms.targets import TargetFields, target_initial
from monitors.models import (
    Monitor,
    Target,
)
from monitors.target_kinds import FormField, all_kinds

MASKED = " Values are shown masked (…1234): one left as shown keeps its stored value."

# The dashboard's template holds the words for its fields; these are the same
# words for the admin. A field missing here (one the dashboard gains later) is
# still offered, under its own name, so the admin never edits less than the
# dashboard does; a target's fields bring their words from their kind
# (TargetKind.form_fields), the headers' only adding that they are masked.
FIELD_WORDS = {
    "name": ("Name", ""),
    "status": ("Status", "A paused monitor runs no checks until it is resumed."),
    "schedule": (
        "Schedule",
        "In words (every 30 minutes, weekdays at 9:00) or as cron (*/30 * * * *).",
    ),
    "timezone": ("Time zone", "Such as Europe/Berlin: the schedule follows it."),
    "goal": ("Goal", "What matters on these pages; changes are judged against it."),
    "judge": ("Judge changes with AI", ""),
    "ignore_lines": ("Lines to ignore", "One per line; /…/ for a pattern."),
    "change_lines": ("Which line changes count", "A changed line is both."),
    "change_containing": (
        "Only when those lines contain",
        "One word or phrase per line; /…/ for a pattern.",
    ),
    "change_appears": ("Tell when this text appears on the page", ""),
    "change_disappears": ("Tell when this text disappears from the page", ""),
    "fetch_with": ("How pages are loaded", ""),
    "channels": ("Channels", "The team's channels this monitor sends to."),
    "email_enabled": ("Send e-mails about changes", ""),
    "email_recipients": ("E-mail recipients", "One address per line."),
    "email_include_diffs": ("Include what changed in the e-mail", ""),
    "webhook_url": ("Webhook address", ""),
    "webhook_events": ("Webhook messages", ""),
    "webhook_pages": ("Page messages for", ""),
    "webhook_headers": ("Webhook headers", "One per line: Name: value." + MASKED),
    "webhook_metadata": ("Webhook metadata", "One per line: name: value."),
    "retention_days": ("Keep check results for (days)", ""),
    "headers": ("Request headers", "One per line: Name: value." + MASKED),
    "remove": ("Remove this target", ""),
}

# Where the monitor's own fields stand on the change page, with the read-only
# facts beside them; a dashboard field not placed here goes under "Other".
MONITOR_SECTIONS: list[tuple[str | None, list[str]]] = [
    (None, ["name", "tags", "status", "team", "deleted_at", "checks"]),
    ("Schedule", ["schedule_words", "schedule", "timezone", "next_run", "last_run",
                  "current_check_id"]),
    ("Judging", ["goal", "judge", "ignore_lines"]),
    ("Which changes matter", ["change_lines", "change_containing",
                              "change_appears", "change_disappears"]),
    ("Loading pages", ["fetch_with"]),
    ("Notifications", ["muted", "muted_until", "channels", "email_enabled",
                       "email_recipients", "email_include_diffs", "webhook_url",
                       "webhook_events", "webhook_pages", "webhook_headers",
                       "webhook_metadata",
                       "notification_json", "retention_days"]),
]  # fmt: skip
LAST_CHECK_SECTION = (
    "Last check",
    {"fields": ["last_check_json", "created_at", "updated_at"]},
)


def new_row_keys() -> dict[str, str]:
    """One empty row per kind of target at the foot of the form: filled in,
    it is added to the monitor (the dashboard's "+ Pages", "+ Website
    crawl"…). Read from the registry when asked, as a kind may register late."""
    return {kind.name: f"tadd{n}" for n, kind in enumerate(all_kinds(), 1)}


@dataclass
class TargetRow:
    """One target's part of the admin form: its fields under the row key the
    dashboard's form reads them by."""

    key: str
    title: str
    fields: TargetFields
    stored: Target | None

    def names(self) -> list[str]:
        shown = [self.fields.add_prefix(name) for name in self.fields.shown_fields()]
        return shown + ([f"{self.key}-remove"] if self.stored else [])

    def filled_in(self, data: Mapping[str, Any]) -> bool:
        """A new row counts once something was typed into it; its check boxes
        and preset choices alone leave it out."""
        for name in self.fields.shown_fields():
            field = self.fields.fields[name]
            if isinstance(field, forms.BooleanField):
                continue
            typed = str(data.get(self.fields.add_prefix(name), "")).strip()
            preset = str(self.fields.initial.get(name, field.initial) or "").strip()
            if typed and typed != preset:
                return True
        return False


def target_rows(monitor: Monitor) -> list[TargetRow]:
    """The monitor's targets, then one empty row per kind to add one."""
    rows = []
    for number, target in enumerate(
        monitor.targets.order_by("position", "created_at"), 1
    ):
        key = f"t{target.id.hex[:16]}"
        fields = TargetFields(prefix=key, initial=target_initial(target))
        title = f"Target {number}: {fields.kind_label}"
        rows.append(TargetRow(key, title, fields, target))
    for kind, key in new_row_keys().items():
        fields = TargetFields(prefix=key, initial={"type": kind})
        rows.append(TargetRow(key, f"Add a target: {fields.kind_label}", fields, None))
    return rows


def _worded(
    name: str, field: forms.Field, spec: FormField | None = None
) -> forms.Field:
    """The field with the admin's words, else those of its kind's control
    (`spec`, for a target's field), else its own."""
    own = (spec.label, spec.help) if spec is not None else (None, "")
    label, help_text = FIELD_WORDS.get(name.rsplit("-", 1)[-1], own)
    field.label = label or field.label
    field.help_text = help_text or field.help_text
    # The dashboard points at its own help and error slots; Django's admin
    # describes a field by its help text instead.
    field.widget.attrs.pop("aria-describedby", None)
    return field


def _masked_pairs(headers: Mapping[str, Any]) -> str:
    """Headers as the form's "Name: value" lines, values masked (see
    with_masked_headers)."""
    return "\n".join(
        f"{name}: {_masked(str(value))}" for name, value in headers.items()
    )


def _unmasked(text: str, headers: Mapping[str, Any]) -> str:
    """The posted lines with each value left masked as shown put back to the
    stored value, so saving the page unchanged keeps every header."""
    lines = []
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        name = name.strip()
        if sep and name in headers and value.strip() == _masked(str(headers[name])):
            line = f"{name}: {headers[name]}"
        lines.append(line)
    return "\n".join(lines)


class TeamClockDateTimeField(forms.DateTimeField):
    """A moment shown and typed on a clock of the form's choosing (the
    team's, as the dashboard shows the mute), stored in UTC. Any moment in
    the year 9999 is MUTED_FOREVER, shown as typed, so "9999-12-31" means
    until unmuted on every clock. A time the clock shows twice (the hour
    repeated when summer time ends) is shown with its offset, and the value
    shown is taken back as the moment it was shown for (`stored`)."""

    zone = "UTC"
    stored: datetime | None = None

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, datetime) and value >= rules.MUTED_FOREVER:
            return value.astimezone(UTC).replace(tzinfo=None)
        if isinstance(value, datetime) and _repeated(value, ZoneInfo(self.zone)):
            return value.astimezone(ZoneInfo(self.zone)).isoformat(sep=" ")
        with timezone.override(ZoneInfo(self.zone)):
            return super().prepare_value(value)

    def to_python(self, value: Any) -> datetime | None:
        if (
            isinstance(value, str)
            and self.stored is not None
            and value.strip() == str(self.prepare_value(self.stored))
        ):
            return self.stored
        try:
            with timezone.override(ZoneInfo(self.zone)):
                moment = super().to_python(value)
        except forms.ValidationError as error:
            if error.code != "ambiguous_timezone":
                raise
            raise forms.ValidationError(self._unclear(value), code=error.code) from None
        if moment is not None and moment.year >= rules.MUTED_FOREVER.year:
            return rules.MUTED_FOREVER
        return moment

    def _unclear(self, value: Any) -> str:
        """Plain words for a time the team's clock skips or shows twice."""
        if _repeated_wall_time(str(value), ZoneInfo(self.zone)):
            return (
                "That time comes twice on the team’s clock that night (the clocks "
                "go back). Add its offset to say which, such as "
                "2026-10-25 02:30+02:00 for the first and +01:00 for the second."
            )
        return (
            "That time does not exist on the team’s clock (the clocks go "
            "forward that night). Choose another time."
        )


def _repeated(moment: datetime, zone: ZoneInfo) -> bool:
    """Whether the clock of `zone` shows `moment`'s time twice that night."""
    local = moment.astimezone(zone).replace(tzinfo=None)
    return (
        local.replace(tzinfo=zone, fold=0).utcoffset()
        != local.replace(tzinfo=zone, fold=1).utcoffset()
    )


def _repeated_wall_time(typed: str, zone: ZoneInfo) -> bool:
    """Whether the typed clock time is one `zone` shows twice (not skips)."""
    with timezone.override(UTC):
        moment = forms.DateTimeField().to_python(typed)
    local = moment.replace(tzinfo=None)
    first = local.replace(tzinfo=zone, fold=0)
    return (
        _repeated(first, zone)
        and first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == local
    )


class MonitorAdminForm(forms.ModelForm):
    """The dashboard's monitor form (monitors.dashboard.forms.monitor) laid out
    for the admin: the same fields, parsed and validated by the same code (and so
    by the API's rules), and saved by the same monitors.editing workflow.
    Status, which the dashboard sets with its Pause and Resume buttons, is
    one more field; so is the mute, which it sets with its Mute choices, as
    a moment (by the API's rule, rules.mute_rule)."""

    status = forms.ChoiceField(choices=Monitor.Status.choices)
    muted_until = TeamClockDateTimeField(
        required=False,
        label="Mute notifications until",
    )

    class Meta:
        model = Monitor
        # Nothing is written field by field: MonitorAdmin.save_model saves the
        # validated edit through monitors.editing.
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        monitor = self.instance
        shown = MonitorForm(monitor=monitor)
        self.initial["status"] = monitor.status
        self.initial["muted_until"] = monitor.mute_ends_at
        # On the team's clock, as the dashboard shows and sets the mute.
        zone = clock.team_zone(monitor.team) if monitor.team_id else "UTC"
        self.fields["muted_until"].zone = zone
        self.fields["muted_until"].stored = monitor.mute_ends_at
        self.fields["muted_until"].help_text = (
            f"On the team’s clock ({zone}), such as 2026-12-01 14:00; a time the "
            "clock shows twice when summer time ends takes its offset, such as "
            "2026-10-25 02:30+01:00. Empty: not muted (clearing it unmutes). "
            "9999-12-31 mutes until someone unmutes it."
        )
        _worded("status", self.fields["status"])
        for name, field in shown.main.fields.items():
            self.fields[name] = _worded(name, field)
            self.initial[name] = shown.main.initial.get(name, field.initial)
        self.rows = target_rows(monitor)
        for row in self.rows:
            specs = {spec.name: spec for spec in row.fields.target_kind.form_fields}
            for name in row.fields.shown_fields():
                full = row.fields.add_prefix(name)
                field = row.fields.fields[name]
                self.fields[full] = _worded(name, field, specs.get(name))
                self.initial[full] = row.fields.initial.get(
                    name, row.fields.fields[name].initial
                )
            if row.stored is not None:
                self.fields[f"{row.key}-remove"] = _worded(
                    "remove", forms.BooleanField(required=False)
                )
        # Header values are credentials: shown masked, put back when posted so.
        self.secrets = {"webhook_headers": (monitor.webhook or {}).get("headers")}
        for row in self.rows:
            if row.stored is not None:
                headers = (row.stored.scrape_options or {}).get("headers")
                self.secrets[row.fields.add_prefix("headers")] = headers
        for name, headers in self.secrets.items():
            if name in self.fields and isinstance(headers, dict):
                self.initial[name] = _masked_pairs(headers)
        self.dashboard = MonitorForm(
            self._dashboard_data() if self.is_bound else None, monitor=monitor
        )

    def _dashboard_data(self) -> QueryDict:
        """What the dashboard's form would have been sent: the rows kept, in
        order, each with its stored id and kind (not taken from the page)."""
        data = self.data.copy()
        for name, headers in self.secrets.items():
            if name in data and isinstance(headers, dict):
                data[name] = _unmasked(data[name], headers)
        keys = []
        for row in self.rows:
            if row.stored is not None:
                if forms.CheckboxInput().value_from_datadict(
                    self.data, self.files, f"{row.key}-remove"
                ):
                    continue
                data[f"{row.key}-id"] = str(row.stored.id)
                data[f"{row.key}-type"] = row.stored.type
            elif row.filled_in(self.data):
                data[f"{row.key}-id"] = ""
                data[f"{row.key}-type"] = row.fields.kind
            else:
                continue
            keys.append(row.key)
        data.setlist("target", keys)
        return data

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.dashboard.is_valid():
            self._show(self.dashboard.errors)
        if "muted_until" in self.changed_data and "muted_until" in cleaned:
            rule = rules.mute_rule(cleaned["muted_until"], timezone.now())
            if rule is not None:
                self.add_error("muted_until", rule.plain)
        return cleaned

    def _show(self, errors: dict[str, list[str]]) -> None:
        """The dashboard's messages on the admin's fields; those about the
        targets as a whole (none left, too many) or about a row's options the
        form does not show go above the form, naming the row."""
        titles = {row.key: row.title for row in self.rows}
        for slot, messages_ in errors.items():
            if slot == "schedule" and "timezone" in self.dashboard.schedule_faults:
                # The zone's problem first, as MonitorForm lists it.
                self.add_error("timezone", messages_[0])
                messages_ = messages_[1:]
            for message in messages_:
                if slot in self.fields:
                    self.add_error(slot, message)
                elif slot in titles:
                    self.add_error(None, f"{titles[slot]}: {message}")
                else:
                    self.add_error(None, message)

    def edit_for(self, current: Monitor) -> dict[str, Any]:
        """The validated edit, as monitors.editing takes it, for the row as
        it is now. A schedule saved as it was is left out, so a change of
        name does not move a run the scheduler has already set."""
        assert self.dashboard.validated_data is not None, "call is_valid() first"
        edit = dict(self.dashboard.validated_data)
        schedule = edit.get("schedule")
        if schedule and (schedule["cron"], schedule["timezone"]) == (
            current.schedule_cron,
            current.schedule_timezone,
        ):
            del edit["schedule"]
        edit["status"] = self.cleaned_data["status"]
        # Only when changed: a mute saved as shown is left as it is now.
        if "muted_until" in self.changed_data:
            until = self.cleaned_data["muted_until"]
            edit["mutedUntil"] = rules.clean_muted_until(until)
        return edit


def _in_zone(moment: datetime | None, zone: str) -> str:
    """A time in the monitor's own zone, the zone named: "2026-11-28 10:30 CET"."""
    if moment is None:
        return "—"
    try:
        local = moment.astimezone(ZoneInfo(zone))
    except (ValueError, KeyError):
        local = moment.astimezone(UTC)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"
