"""The body a channel is written in, as /v2/channels takes it: the one set of
channel rules that the API, the dashboard's channel form, the admin and the
importer all validate with, so none of them takes what another refuses."""

from __future__ import annotations

from datetime import time
from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from checks.notify import kinds
from checks.targets.options import StrictCharField, StrictIntegerField, StrictMixin
from monitors.models import Channel

NAME_MAX = 120
FAILING_AFTER_MAX = 100
SETTINGS_MAX_CHARS = 4000


class KindField(serializers.CharField):
    """A channel kind's name. Checked in ChannelInputSerializer.validate_kind
    (its 400 lists the kinds); documented as an enum, so generated clients and
    schemathesis know which names a create may use."""


class KindFieldSchema(OpenApiSerializerFieldExtension):
    target_class = KindField

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict:
        # Read when the document is built: a plugin may add kinds after import.
        return {"type": "string", "enum": [k.name for k in kinds.all_kinds()]}


class ChannelInputSerializer(StrictMixin, serializers.Serializer):
    # Create with every field but the optional ones; with partial=True, an edit.
    # context["team"] is the caller's team (some kinds pick settings among its
    # members); context["channel"] the stored channel when editing. Unknown keys
    # are a 400 as on /v2/monitor (a misspelt field must not be dropped unseen);
    # `origin`, which the Firecrawl SDKs stamp on bodies, is ignored. Comments,
    # not a docstring: drf-spectacular would publish one in the OpenAPI document.

    allow_extra = ("origin",)

    name = StrictCharField(max_length=NAME_MAX)
    kind = KindField(help_text="One of the kinds this Pagewatch knows.")
    settings = serializers.DictField(
        help_text="The kind's settings. Secrets are written here and never "
        "returned: an edit that leaves one out (or sends back the masked form) "
        "keeps it."
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=Channel.Event.values),
        required=False,
        max_length=len(Channel.Event.values),
    )
    digest = serializers.ChoiceField(
        choices=["daily", "weekly"], required=False, allow_null=True
    )
    digestAt = serializers.TimeField(
        required=False, allow_null=True, help_text="HH:MM in the team's time zone."
    )
    failingAfter = StrictIntegerField(
        required=False, min_value=1, max_value=FAILING_AFTER_MAX
    )

    def validate_kind(self, value: str) -> str:
        stored: Channel | None = self.context.get("channel")
        if stored is not None and value != stored.kind:
            raise ValidationError("A channel's kind cannot change; make a new one.")
        if kinds.offered(value) is None:
            known = ", ".join(k.name for k in kinds.all_kinds())
            raise ValidationError(f"Unknown kind {value!r}. Known kinds: {known}.")
        return value

    def validate_settings(self, given: dict[str, Any]) -> dict[str, Any]:
        # A field rule rather than part of validate(), which DRF skips when
        # any field failed: a form missing both its name and its address
        # must say both at once.
        stored: Channel | None = self.context.get("channel")
        name = stored.kind if stored else self.initial_data.get("kind")
        kind = kinds.kind_for(name) if isinstance(name, str) else None
        if kind is None:  # the kind's own error says what is wrong
            return given
        if len(str(given)) > SETTINGS_MAX_CHARS:
            raise ValidationError("Too large.")
        team = self.context["team"]
        try:
            if stored is not None:
                given = kind.merge(stored.settings, given)
                return kind.clean_change(team, stored.settings, given)
            return kind.clean_for(team, given)
        except kinds.SettingsError as exc:
            raise ValidationError({k: [v] for k, v in exc.errors.items()}) from None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        stored: Channel | None = self.context.get("channel")
        if self.partial and not attrs:
            raise ValidationError("Update body cannot be empty.")
        name = attrs.get("kind") or (stored.kind if stored else "")
        kind = kinds.kind_for(name)
        assert kind is not None
        problem = kind.unavailable()
        if problem and (stored is None or "settings" in attrs):
            raise ValidationError({"kind": [problem]})
        digest = attrs.get("digest", stored.digest if stored else None) or None
        digest_at = attrs.get("digestAt", stored.digest_at if stored else None)
        if digest and digest_at is None:
            attrs["digestAt"] = time(9, 0)
        return attrs
