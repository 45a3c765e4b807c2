"""The monitor form's own fields (name, schedule, goal, notifications) and
the small parsers from what people type to the API's JSON shape: one item a
line, "Name: value" lines, numbers."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

from django import forms

from monitors import rules
from monitors.models import Monitor
from monitors.schedule import looks_like_cron
from monitors.schedule_words import schedule_box_text
from monitors.target_kinds import all_kinds

WEBHOOK_EVENT_LABELS = {
    "monitor.page": "A message for each page checked",
    "monitor.check.completed": "A message when a check ends",
}
WEBHOOK_PAGES_INVALID = "Choose every page or only the pages that changed."
CHANGE_LINES_CHOICES = [
    ("any", "Lines added or removed"),
    ("added", "Only lines added"),
    ("removed", "Only lines removed"),
]
JUDGE_CHOICES = [
    ("auto", "Yes, whenever a goal is set"),
    ("on", "Yes, always — a goal is required"),
    ("off", "No, report every change"),
]
# Rows of the form; the bound is generous so the rule (not this parser)
# reports "too many targets", as the API does.
MAX_TARGET_ROWS = 100
NON_FIELD = "__all__"
_KEY = re.compile(r"^t[0-9a-f]{4,16}$")
_INTEGER = re.compile(r"^[+-]?\d{1,9}$")
_SPLIT_ITEMS = re.compile(r"[\s,;]+")
_NEW_LINE = re.compile(r"\r\n|\r|\n")
# The field in the form that a problem at a path of the API object lands on.
_MAIN_SLOTS = {
    "name": "name",
    "schedule": "schedule",
    "goal": "goal",
    "judgeEnabled": "judge",
    "ignoreLines": "ignore_lines",
    "fetchWith": "fetch_with",
    "retentionDays": "retention_days",
    "targets": "targets",
    "channels": "channels",
    "tags": "tags",
}
_CHANGE_SLOTS = {
    "lines": "change_lines",
    "containing": "change_containing",
    "appears": "change_appears",
    "disappears": "change_disappears",
}
_WEBHOOK_SLOTS = {
    "url": "webhook_url",
    "events": "webhook_events",
    "headers": "webhook_headers",
    "metadata": "webhook_metadata",
}
_EMAIL_SLOTS = {
    "enabled": "email_enabled",
    "recipients": "email_recipients",
    "includeDiffs": "email_include_diffs",
}


class _KindSlots(Mapping[tuple[str, ...], str]):
    """Every kind's API key paths and the controls their errors land on,
    read from the registry when asked (a kind may register late)."""

    def _slots(self) -> dict[tuple[str, ...], str]:
        return {
            f.path: f.name
            for kind in all_kinds()
            for f in kind.form_fields
            if f.takes_errors
        }

    def __getitem__(self, path: tuple[str, ...]) -> str:
        return self._slots()[path]

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self._slots())

    def __len__(self) -> int:
        return len(self._slots())


_TARGET_SLOTS = _KindSlots()
# Fields whose errors concern several fields at once (the goal rules): shown as
# soon as any of these were touched.
_CROSS_FIELD_SLOTS = {"goal", "judge", "targets", "fetch_with"}


def new_target_key() -> str:
    return "t" + secrets.token_hex(4)


def split_schedule(value: str) -> tuple[str | None, str | None]:
    """One box takes either words or cron (monitors.schedule.looks_like_cron
    tells them apart: "9am daily" is words, "0 9 * * *" cron)."""
    value = value.strip()
    if not value:
        return None, None
    if looks_like_cron(value):
        return value, None
    return None, value


def _lines(text: str) -> list[str]:
    """The box's lines as a browser sends them (CRLF, CR or LF), not as
    str.splitlines reads them: it splits at U+2028, U+0085 and others too, so
    a search holding one would quietly be two here and one in the API (which
    refuses it, as the form then does)."""
    lines = _NEW_LINE.split(text or "")
    return [line.strip() for line in lines if line.strip()]


def _tags(text: str) -> list[str]:
    """The tags box: names separated by commas (spaces belong to a name)."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _items(text: str) -> list[str]:
    return [item for item in _SPLIT_ITEMS.split(text or "") if item]


def _number(text: str) -> Any:
    """An integer when it is one; otherwise the text, so the number rule reports
    exactly what the API would for that JSON value."""
    text = (text or "").strip()
    return int(text) if _INTEGER.match(text) else text


def _pairs(text: str, field: str, shape: str) -> tuple[dict[str, str], list[str]]:
    """`Name: value` lines; a problem names the field and its line, as the
    form's summary lists both fields' problems together."""
    pairs: dict[str, str] = {}
    problems = []
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            problems.append(f"{field}, line {number}: write each entry as “{shape}”.")
            continue
        pairs[name.strip()] = value.strip()
    return pairs, problems


def _given(value: Any) -> bool:
    return value not in ("", None, [], {})


def _format_pairs(mapping: Mapping[str, Any] | None) -> str:
    return "\n".join(f"{k}: {v}" for k, v in (mapping or {}).items())


# Fields whose label says it all: monitor_form.html gives them no help line,
# so their description is the error slot alone (a missing id reads as nothing).
_NO_HELP = frozenset({"email_enabled", "email_include_diffs", "webhook_events"})


def _attrs(slot: str, *, name: str = "", **extra: Any) -> dict[str, Any]:
    described = (
        f"err-{slot}" if (name or slot) in _NO_HELP else f"err-{slot} help-{slot}"
    )
    return {"aria-describedby": described, **extra}


# ---------------------------------------------------------------- the fields


# The monitor form's slots in the order the page shows them (the error
# summary follows it); target rows stand where "targets" is.
_PAGE_ORDER = (
    NON_FIELD, "name", "tags", "targets", "schedule", "goal", "judge", "ignore_lines",
    "change_lines", "change_containing", "change_appears", "change_disappears",
    "fetch_with", "channels", "email_enabled", "email_recipients",
    "email_include_diffs",
    "webhook_url", "webhook_events", "webhook_pages", "webhook_headers",
    "webhook_metadata", "retention_days",
)  # fmt: skip


def _widgets() -> dict[str, forms.Widget]:
    """The monitor fields' controls, made afresh for each form (marking a field
    invalid changes its widget's attributes)."""
    return {
        "name": forms.TextInput(
            attrs=_attrs("name", maxlength=rules.NAME_MAX, autocomplete="off")
        ),
        "schedule": forms.TextInput(
            attrs=_attrs(
                "schedule",
                placeholder="for example, every 30 minutes",
                autocomplete="off",
                spellcheck="false",
            )
        ),
        # Its errors share the schedule's slot, which names the control at
        # fault (MonitorForm.controls_for) for static/js/app.js.
        "timezone": forms.TextInput(
            attrs={
                "aria-describedby": "err-schedule help-timezone",
                "list": "timezones",
                "autocomplete": "off",
            }
        ),
        "tags": forms.TextInput(
            attrs=_attrs(
                "tags",
                placeholder="for example, Competitors, Pricing",
                autocomplete="off",
            )
        ),
        "goal": forms.Textarea(attrs=_attrs("goal", rows=3, maxlength=rules.GOAL_MAX)),
        "ignore_lines": forms.Textarea(
            attrs=_attrs(
                "ignore_lines",
                rows=3,
                spellcheck="false",
                placeholder="Last updated\n/^\\d+ people viewed this$/",
            )
        ),
        "change_containing": forms.Textarea(
            attrs=_attrs(
                "change_containing",
                rows=2,
                spellcheck="false",
                placeholder="Sale\n/\\d+% off/",
            )
        ),
        "change_appears": forms.TextInput(
            attrs=_attrs("change_appears", placeholder="Tickets on sale")
        ),
        "change_disappears": forms.TextInput(
            attrs=_attrs("change_disappears", placeholder="Out of stock")
        ),
        "retention_days": forms.NumberInput(
            attrs=_attrs(
                "retention_days",
                min=rules.RETENTION_MIN,
                max=rules.RETENTION_MAX,
                inputmode="numeric",
            )
        ),
        "webhook_url": forms.URLInput(
            attrs=_attrs(
                "webhook_url", placeholder="https://example.com/hooks/pagewatch"
            )
        ),
        "webhook_headers": forms.Textarea(
            attrs=_attrs(
                "webhook_headers", rows=2, placeholder="Authorization: Bearer …"
            )
        ),
        "webhook_metadata": forms.Textarea(
            attrs=_attrs("webhook_metadata", rows=2, placeholder="team: marketing")
        ),
        "email_recipients": forms.Textarea(
            attrs=_attrs("email_recipients", rows=2, placeholder="alerts@example.com")
        ),
    }


class MonitorFields(forms.Form):
    """The monitor's own fields. Deliberately lenient: parsing only."""

    name = forms.CharField(required=False, strip=False)
    tags = forms.CharField(required=False, strip=False)
    # Choices (the team's channels, by name) are set by MonitorForm.
    channels = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple
    )
    schedule = forms.CharField(required=False)
    timezone = forms.CharField(required=False)
    goal = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    judge = forms.ChoiceField(
        required=False, choices=JUDGE_CHOICES, widget=forms.RadioSelect, initial="auto"
    )
    ignore_lines = forms.CharField(required=False, widget=forms.Textarea)
    change_lines = forms.ChoiceField(
        required=False,
        choices=CHANGE_LINES_CHOICES,
        widget=forms.RadioSelect,
        initial="any",
    )
    change_containing = forms.CharField(required=False, widget=forms.Textarea)
    change_appears = forms.CharField(required=False, strip=False)
    change_disappears = forms.CharField(required=False, strip=False)
    fetch_with = forms.ChoiceField(
        required=False,
        choices=Monitor.FetchWith.choices,
        widget=forms.RadioSelect,
        initial=Monitor.FetchWith.AUTO,
    )
    retention_days = forms.CharField(required=False)
    webhook_url = forms.CharField(required=False)
    webhook_events = forms.MultipleChoiceField(
        required=False,
        choices=list(WEBHOOK_EVENT_LABELS.items()),
        widget=forms.CheckboxSelectMultiple,
        initial=list(rules.WEBHOOK_EVENTS),
    )
    webhook_pages = forms.ChoiceField(
        required=False,
        choices=Monitor.WebhookPages.choices,
        widget=forms.RadioSelect,
        initial=Monitor.WebhookPages.ALL,
    )
    webhook_headers = forms.CharField(required=False, widget=forms.Textarea)
    webhook_metadata = forms.CharField(required=False, widget=forms.Textarea)
    email_enabled = forms.BooleanField(required=False)
    email_recipients = forms.CharField(required=False, widget=forms.Textarea)
    email_include_diffs = forms.BooleanField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        widgets = _widgets()
        for name, widget in widgets.items():
            self.fields[name].widget = widget
        for name in (
            "judge",
            "change_lines",
            "fetch_with",
            "webhook_events",
            "webhook_pages",
            "email_enabled",
            "email_include_diffs",
            "channels",
        ):
            self.fields[name].widget.attrs.update(_attrs(name))


def monitor_initial(monitor: Monitor) -> dict[str, Any]:
    webhook = monitor.webhook or {}
    email = monitor.email_settings
    # "auto" reproduces the stored choice unless judging was switched off on
    # purpose: with a goal, or with a search target (which needs one otherwise).
    searches = any(t.kind and t.kind.needs_goal for t in monitor.targets.all())
    opted_out = not monitor.judge_enabled and (monitor.goal or searches)
    judge = "off" if opted_out else "auto"
    changes = monitor.change_rules or {}
    return {
        "name": monitor.name,
        "tags": ", ".join(monitor.tag_names),
        "schedule": schedule_box_text(monitor.schedule),
        "timezone": monitor.schedule_timezone,
        "goal": monitor.goal or "",
        "judge": judge,
        "ignore_lines": "\n".join(monitor.ignore_lines or []),
        "change_lines": changes.get("lines") or "any",
        "change_containing": "\n".join(changes.get("containing") or []),
        "change_appears": changes.get("appears") or "",
        "change_disappears": changes.get("disappears") or "",
        "fetch_with": monitor.fetch_with,
        "retention_days": monitor.retention_days,
        "webhook_url": webhook.get("url", ""),
        "webhook_events": webhook.get("events") or list(rules.WEBHOOK_EVENTS),
        "webhook_pages": monitor.webhook_pages,
        "webhook_headers": _format_pairs(webhook.get("headers")),
        "webhook_metadata": _format_pairs(webhook.get("metadata")),
        "email_enabled": bool(email.get("enabled")),
        "email_recipients": "\n".join(email.get("recipients") or []),
        "email_include_diffs": bool(email.get("includeDiffs")),
        "channels": [
            str(pk)
            for pk in monitor.channels.filter(owner_monitor__isnull=True).values_list(
                "pk", flat=True
            )
        ],
    }
