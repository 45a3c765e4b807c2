"""The team's small forms: a new API key, and a file of monitors to import."""

from __future__ import annotations

from typing import Any

from django import forms

from monitors import moving
from monitors.models import ApiKey


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        required=False,
        help_text="So you know later where it is used, e.g. “Zapier” or “CI”.",
    )
    scope = forms.ChoiceField(
        choices=ApiKey.Scope.choices, initial=ApiKey.Scope.WRITE, required=False
    )

    def clean_scope(self) -> str:
        # Left out (an older form, a script): as before, a key that can write.
        return self.cleaned_data.get("scope") or ApiKey.Scope.WRITE


class ImportForm(forms.Form):
    """Where monitors come from: a file, or a service's address and key. The
    choices and their words come from the sources' own classes."""

    source = forms.ChoiceField(label="Move from")
    file = forms.FileField(label="File", required=False)
    url = forms.CharField(label="Its address", required=False, max_length=2048)
    api_key = forms.CharField(
        label="Its API key",
        required=False,
        max_length=512,
        widget=forms.PasswordInput(render_value=False),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sources = moving.sources()
        self.fields["source"].choices = [
            (name, cls.label) for name, cls in self.sources.items()
        ]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind = self.sources.get(data.get("source", ""))
        if kind is None:
            return data
        upload = data.get("file")
        if upload is not None and not kind.reads_file:
            self.add_error(
                "file", f"{kind.label} is read from its address, not a file."
            )
        elif upload is None and not data.get("url"):
            where = "a file" if kind.reads_file else "its address"
            if kind.reads_file and kind.reads_remote:
                where = "a file, or its address and API key"
            self.add_error("file" if kind.reads_file else "url", f"Give {where}.")
        elif upload is not None and upload.size > moving.max_bytes():
            self.add_error(
                "file",
                f"The file is larger than {moving.max_bytes() // 2**20} MB, the "
                "most Pagewatch imports.",
            )
        elif upload is None and not kind.reads_remote:
            self.add_error("file", f"{kind.label} is imported from a file: choose one.")
        return data
