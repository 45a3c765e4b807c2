"""Validation of scrapeOptions and crawlOptions: typed known keys, unknown keys
kept untouched (Firecrawl passes them through), so options Pagewatch does not
act on yet still round-trip."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from monitors import rules

STRING_FORMATS = (
    "markdown",
    "html",
    "rawHtml",
    "links",
    "images",
    "summary",
    "screenshot",
)
OBJECT_FORMATS = ("json", "screenshot", "changeTracking", "summary", "attributes")
ACTION_TYPES = (
    "wait", "click", "write", "press", "scroll", "screenshot", "scrape",
    "executeJavascript", "pdf",
)  # fmt: skip
PROXIES = ("basic", "stealth", "enhanced", "auto")


class StrictMixin:
    """Reject keys the object does not define, naming each one."""

    allow_extra: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = set(data) - set(self.fields) - set(self.allow_extra)  # type: ignore[attr-defined]
            if unknown:
                raise ValidationError(
                    {key: ["Unknown field."] for key in sorted(unknown)}
                )
        return super().to_internal_value(data)  # type: ignore[misc]


class PassThroughMixin:
    """Validate the known keys; keep unknown ones as given (Firecrawl's catchall)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise ValidationError("Must be an object.")
        fields = self.fields  # type: ignore[attr-defined]
        known = {k: v for k, v in data.items() if k in fields}
        validated = super().to_internal_value(known)  # type: ignore[misc]
        extra = {k: v for k, v in data.items() if k not in fields}
        return {**extra, **validated}

    def to_representation(self, instance: Any) -> Any:
        return instance


class StrictCharField(serializers.CharField):
    """A JSON string and nothing else: DRF's CharField would quietly turn 42
    into "42", where Firecrawl (and the Python SDK's types) reject it."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StringMapField(serializers.DictField):
    """A JSON object of string values, with a size cap and optional key rules."""

    def __init__(
        self,
        *,
        max_items: int,
        key_error: Any = None,
        value_error: Any = None,
        value_max: int = rules.HEADER_VALUE_MAX,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault(
            "child", StrictCharField(allow_blank=True, max_length=value_max)
        )
        super().__init__(**kwargs)
        self.max_items = max_items
        self.key_error = key_error
        self.value_error = value_error

    def to_internal_value(self, data: Any) -> dict[str, str]:
        value = super().to_internal_value(data)
        if len(value) > self.max_items:
            raise ValidationError(f"At most {self.max_items} entries are allowed.")
        errors = {}
        for key, item in value.items():
            problem = (self.key_error and self.key_error(key)) or (
                self.value_error and self.value_error(item)
            )
            if problem:
                errors[key] = [problem]
        if errors:
            raise ValidationError(errors)
        return value


def string_list(
    max_items: int, item_max: int = 256, **kwargs: Any
) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=item_max), max_length=max_items, **kwargs
    )


class ViewportSerializer(StrictMixin, serializers.Serializer):
    width = serializers.IntegerField(min_value=1, max_value=rules.SCREENSHOT_WIDTH_MAX)
    height = serializers.IntegerField(
        min_value=1, max_value=rules.SCREENSHOT_HEIGHT_MAX
    )


class ScreenshotSerializer(PassThroughMixin, serializers.Serializer):
    """The screenshot format, and the screenshot action (same options)."""

    type = serializers.ChoiceField(choices=("screenshot",))
    fullPage = serializers.BooleanField(required=False)
    quality = serializers.IntegerField(required=False, min_value=1, max_value=100)
    viewport = ViewportSerializer(required=False)


class FormatField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str):
            if data not in STRING_FORMATS:
                raise ValidationError(
                    f"Unknown format '{data[:40]}'. "
                    f"Use one of: {', '.join(STRING_FORMATS)}."
                )
            return data
        if isinstance(data, Mapping):
            kind = data.get("type")
            if kind not in OBJECT_FORMATS:
                raise ValidationError(
                    f"Format objects need a type among: {', '.join(OBJECT_FORMATS)}."
                )
            modes = data.get("modes", [])
            if kind == "changeTracking" and (
                not isinstance(modes, list)
                or set(map(str, modes)) - {"git-diff", "json"}
            ):
                raise ValidationError(
                    "changeTracking modes must be among git-diff, json."
                )
            if kind == "screenshot":
                return ScreenshotSerializer().run_validation(data)
            return dict(data)
        raise ValidationError("Must be a format name or a format object.")


class ParserField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if data == "pdf" or (isinstance(data, Mapping) and data.get("type") == "pdf"):
            return data
        raise ValidationError('Parsers must be "pdf" or {"type": "pdf"}.')


# --- Page actions (Firecrawl's v2 scrape `actions`): one shape per type ---------

SELECTOR_MAX, TEXT_MAX, KEY_MAX, SCRIPT_MAX = 1000, 10_000, 64, 100_000
PDF_FORMATS = (
    "A0", "A1", "A2", "A3", "A4", "A5", "A6", "Letter", "Legal", "Tabloid", "Ledger",
)  # fmt: skip
BOTH_OR_NEITHER = "Either 'milliseconds' or 'selector' must be provided, but not both."


def _selector(required: bool = True) -> StrictCharField:
    return StrictCharField(required=required, max_length=SELECTOR_MAX)


class _Action(PassThroughMixin, serializers.Serializer):
    type = serializers.ChoiceField(choices=ACTION_TYPES)


class WaitAction(_Action):
    milliseconds = serializers.IntegerField(
        required=False, min_value=1, max_value=rules.WAIT_TOTAL_MAX_MS
    )
    selector = _selector(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("milliseconds" in attrs) == ("selector" in attrs):
            raise ValidationError({"milliseconds": [BOTH_OR_NEITHER]})
        return attrs


class ClickAction(_Action):
    selector = _selector()
    all = serializers.BooleanField(required=False)


class WriteAction(_Action):
    text = StrictCharField(allow_blank=True, max_length=TEXT_MAX)


class PressAction(_Action):
    key = StrictCharField(max_length=KEY_MAX)


class ScrollAction(_Action):
    direction = serializers.ChoiceField(choices=("up", "down"), required=False)
    selector = _selector(required=False)


class ScreenshotAction(_Action, ScreenshotSerializer):
    type = serializers.ChoiceField(choices=ACTION_TYPES)


class ExecuteJavascriptAction(_Action):
    script = StrictCharField(max_length=SCRIPT_MAX)


class PdfAction(_Action):
    landscape = serializers.BooleanField(required=False)
    # Chromium prints at 10 % to 200 %.
    scale = serializers.FloatField(required=False, min_value=0.1, max_value=2)
    format = serializers.ChoiceField(choices=PDF_FORMATS, required=False)


ACTIONS: dict[str, type[_Action]] = {
    "wait": WaitAction,
    "click": ClickAction,
    "write": WriteAction,
    "press": PressAction,
    "scroll": ScrollAction,
    "screenshot": ScreenshotAction,
    "scrape": _Action,
    "executeJavascript": ExecuteJavascriptAction,
    "pdf": PdfAction,
}


class ActionField(serializers.JSONField):
    """One action, validated by the shape of its type."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise ValidationError("Each action must be an object with a type.")
        kind = data.get("type")
        shape = ACTIONS.get(kind) if isinstance(kind, str) else None
        if shape is None:
            choices = ", ".join(ACTION_TYPES)
            raise ValidationError({"type": [f"Must be one of: {choices}."]})
        return shape().run_validation(data)


class LocationSerializer(StrictMixin, serializers.Serializer):
    country = serializers.RegexField(r"^[A-Za-z]{2}$", required=False)
    languages = string_list(20, 35, required=False)


class ProfileSerializer(StrictMixin, serializers.Serializer):
    name = StrictCharField(max_length=128)
    saveChanges = serializers.BooleanField(required=False)


class ThreatProtectionSerializer(StrictMixin, serializers.Serializer):
    mode = StrictCharField(required=False, max_length=32)
    riskScoreThreshold = serializers.IntegerField(
        required=False, min_value=0, max_value=100
    )
    blacklist = string_list(100, required=False)
    whitelist = string_list(100, required=False)
    blockedTlds = string_list(100, 63, required=False)
    failurePolicy = StrictCharField(required=False, max_length=32)


class AuditMetadataSerializer(StrictMixin, serializers.Serializer):
    username = StrictCharField(max_length=256, required=False)


class ScrapeOptionsSerializer(PassThroughMixin, serializers.Serializer):
    formats = serializers.ListField(child=FormatField(), required=False, max_length=20)
    onlyMainContent = serializers.BooleanField(required=False)
    onlyCleanContent = serializers.BooleanField(required=False)
    includeTags = string_list(100, required=False)
    excludeTags = string_list(100, required=False)
    maxAge = serializers.IntegerField(required=False, min_value=0)
    minAge = serializers.IntegerField(required=False, min_value=0)
    headers = StringMapField(
        max_items=rules.WEBHOOK_HEADERS_MAX,
        required=False,
        value_error=rules.header_value_error,
    )
    waitFor = serializers.IntegerField(required=False, min_value=0, max_value=60_000)
    mobile = serializers.BooleanField(required=False)
    skipTlsVerification = serializers.BooleanField(required=False)
    timeout = serializers.IntegerField(
        required=False, min_value=1000, max_value=300_000
    )
    parsers = serializers.ListField(child=ParserField(), required=False, max_length=5)
    actions = serializers.ListField(child=ActionField(), required=False)
    location = LocationSerializer(required=False)
    removeBase64Images = serializers.BooleanField(required=False)
    blockAds = serializers.BooleanField(required=False)
    proxy = serializers.ChoiceField(choices=PROXIES, required=False)
    storeInCache = serializers.BooleanField(required=False)
    lockdown = serializers.BooleanField(required=False)
    redactPII = serializers.BooleanField(required=False)
    profile = ProfileSerializer(required=False)
    threatProtection = ThreatProtectionSerializer(required=False)
    auditMetadata = AuditMetadataSerializer(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        error = rules.actions_error(attrs.get("waitFor"), attrs.get("actions"))
        if error is not None:
            raise ValidationError({error[0]: [error[1]]})
        formats = attrs.get("formats") or []
        shots = [f for f in formats if f == "screenshot" or _typed(f, "screenshot")]
        if len(shots) > 1:
            raise ValidationError(
                {"formats": ["You may only specify one screenshot format."]}
            )
        return attrs


def _typed(value: Any, kind: str) -> bool:
    return isinstance(value, Mapping) and value.get("type") == kind


class CrawlOptionsSerializer(PassThroughMixin, serializers.Serializer):
    limit = serializers.IntegerField(required=False, min_value=1, max_value=10_000)
    maxDiscoveryDepth = serializers.IntegerField(
        required=False, min_value=0, max_value=100
    )
    maxDepth = serializers.IntegerField(required=False, min_value=0, max_value=100)
    includePaths = string_list(100, 512, required=False)
    excludePaths = string_list(100, 512, required=False)
    regexOnFullURL = serializers.BooleanField(required=False)
    crawlEntireDomain = serializers.BooleanField(required=False)
    allowSubdomains = serializers.BooleanField(required=False)
    allowExternalLinks = serializers.BooleanField(required=False)
    sitemap = serializers.ChoiceField(
        choices=("skip", "include", "only"), required=False
    )
    ignoreQueryParameters = serializers.BooleanField(required=False)
    deduplicateSimilarURLs = serializers.BooleanField(required=False)
    delay = serializers.FloatField(required=False, min_value=0, max_value=60)
    maxConcurrency = serializers.IntegerField(
        required=False, min_value=1, max_value=100
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        for field in ("includePaths", "excludePaths"):
            for index, pattern in enumerate(attrs.get(field) or []):
                try:
                    rules.path_pattern(pattern)
                except ValueError as exc:
                    raise ValidationError({field: {index: [str(exc)]}}) from None
        return attrs
