"""One target row of the monitor form: its controls are its kind's
(TargetKind.form_fields), and its initial values come from a saved target."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from monitors.dashboard.forms.fields import _format_pairs
from monitors.models import Target
from monitors.target_kinds import FormField, all_kinds, kind_for


class TargetFields(forms.Form):
    """One target row, its controls its kind's (TargetKind.form_fields); the
    form prefix is the row's key (t1a2b3c4-urls...)."""

    # Set by MonitorForm.mark_invalid when an advanced option has an error.
    advanced_invalid = False

    id = forms.CharField(required=False, widget=forms.HiddenInput)
    type = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        typed = self["type"].value()
        # A type no kind knows reads as the first kind, and the API names it.
        self.target_kind = kind_for(str(typed or "")) or all_kinds()[0]
        for spec in self.target_kind.form_fields:
            self.fields[spec.name] = _control(spec, self.slot(spec.name))

    @property
    def key(self) -> str:
        return self.prefix or ""

    def shown_fields(self) -> tuple[str, ...]:
        """The fields this kind of target shows (and so has error slots for)."""
        return tuple(spec.name for spec in self.target_kind.form_fields)

    @property
    def kind(self) -> str:
        return self.target_kind.name

    @property
    def kind_label(self) -> str:
        return self.target_kind.label

    @property
    def advanced_label(self) -> str:
        return self.target_kind.advanced_label

    @property
    def not_run_words(self) -> str:
        """Why checks will not run a target of this kind ("" when they will)."""
        return Target(type=self.kind).not_run_words

    def slot(self, name: str) -> str:
        return f"{self.key}-{name}"

    def slot_for(self, path: tuple[str, ...]) -> str | None:
        """The control an API error at this key path lands on, if shown."""
        slots = {
            spec.path: spec.name
            for spec in self.target_kind.form_fields
            if spec.takes_errors
        }
        return slots.get(path[:2]) or slots.get(path[:1])

    def is_advanced(self, name: str) -> bool:
        return any(
            spec.advanced and spec.name == name for spec in self.target_kind.form_fields
        )

    def main_rows(self) -> list[list[dict[str, Any]]]:
        return self._rows(advanced=False)

    def advanced_rows(self) -> list[list[dict[str, Any]]]:
        return self._rows(advanced=True)

    def _rows(self, *, advanced: bool) -> list[list[dict[str, Any]]]:
        """The controls in page order, those of one row side by side."""
        rows: list[list[dict[str, Any]]] = []
        last = ""
        for spec in self.target_kind.form_fields:
            if spec.advanced != advanced:
                continue
            shown = {
                "f": self[spec.name],
                "label": spec.label,
                "help": spec.help,
                "check": spec.widget == "checkbox",
            }
            if spec.row and spec.row == last:
                rows[-1].append(shown)
            else:
                rows.append([shown])
            last = spec.row
        return rows


def _control(spec: FormField, slot: str) -> forms.Field:
    """The Django field and widget of one of a kind's controls."""
    described = f"err-{slot} help-{slot}" if spec.help else f"err-{slot}"
    attrs = {"aria-describedby": described}
    if spec.widget == "checkbox":
        return forms.BooleanField(
            required=False,
            initial=spec.initial,
            widget=forms.CheckboxInput(attrs=attrs),
        )
    widget: forms.Widget
    if spec.widget == "number":
        widget = forms.NumberInput(attrs={**attrs, **spec.attrs})
    elif spec.widget == "select":
        widget = forms.Select(choices=list(spec.choices), attrs=attrs)
    elif spec.widget == "url":
        widget = forms.URLInput(attrs={**spec.attrs, **attrs})
    elif spec.widget == "textarea":
        widget = forms.Textarea(attrs={**spec.attrs, **attrs})
    else:
        widget = forms.TextInput(attrs={**spec.attrs, **attrs})
    return forms.CharField(required=False, initial=spec.initial, widget=widget)


def target_initial(target: Target) -> dict[str, Any]:
    """A stored target as its row's controls show it: read from its API
    object, so each control reads the key it writes."""
    kind = target.kind or all_kinds()[0]
    shape = {"type": target.type, **kind.represent(target)}
    initial: dict[str, Any] = {"id": str(target.id), "type": target.type}
    for spec in kind.form_fields:
        value: Any = shape
        for key in spec.path:
            value = value.get(key) if isinstance(value, Mapping) else None
        initial[spec.name] = _shown(spec, value)
    return initial


def _shown(spec: FormField, value: Any) -> Any:
    if value is None or value == "":
        return spec.initial
    if spec.shape == "check":
        return value is not False
    if spec.shape == "format":
        return _format_in(value, spec.format) is not None
    if spec.shape == "pairs":
        return _format_pairs(value)
    if spec.shape in ("lines", "items"):
        show = spec.show_item or str
        return spec.joiner.join(show(str(item)) for item in value or [])
    return value


def _format_in(formats: Any, name: str) -> Any:
    """The format `name` in a list of formats ("screenshot" or its object
    with options), or None."""
    for fmt in formats if isinstance(formats, list) else []:
        if fmt == name or (isinstance(fmt, Mapping) and fmt.get("type") == name):
            return fmt
    return None


def _with_format(formats: Any, name: str, wanted: bool) -> list[Any]:
    """The formats with `name` in or out, as its check box says: a format
    set through the API with its own options is kept while the box stays
    ticked, the other formats always."""
    present = _format_in(formats, name)
    kept = [
        f for f in (formats if isinstance(formats, list) else []) if f is not present
    ]
    if wanted:
        kept.append(present if present is not None else name)
    return kept
