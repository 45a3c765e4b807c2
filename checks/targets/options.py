"""The API's strict JSON fields, the URL field, and the validation of
scrapeOptions and crawlOptions: typed known keys, unknown keys kept untouched
(Firecrawl passes them through), so options Pagewatch does not act on yet
still round-trip; a known key given in Python's spelling (only_main_content)
is kept under the API's. The target kinds' serializers are built from them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from checks.ai import patterns
from checks.fetch.policy import allow_private_targets, host_block_reason
from monitors import rules
from monitors.rules_problems import map_problems
from monitors.url_rule import checked_url

STRING_FORMATS = (
    "markdown",
    "html",
    "rawHtml",
    "links",
    "images",
    "summary",
    "screenshot",
)
# Formats with options of their own; every format may also be given as an
# object, as Firecrawl reads a string: {"type": "html"} is "html".
OPTION_FORMATS = ("json", "screenshot", "changeTracking", "attributes")
# The keys Firecrawl's strict format objects define beside `type`; any other
# is a 400 naming it. Its screenshot object is not strict (it drops unknown
# keys, so ScreenshotSerializer keeps them as given).
FORMAT_KEYS = {
    "json": ("schema", "prompt", "checkPromptInjection"),
    "changeTracking": ("modes", "schema", "prompt", "tag"),
    "attributes": ("selectors",),
}
OBJECT_FORMATS = tuple(dict.fromkeys(STRING_FORMATS + OPTION_FORMATS))
ACTION_TYPES = (
    "wait", "click", "write", "press", "scroll", "screenshot", "scrape",
    "executeJavascript", "pdf",
)  # fmt: skip
PROXIES = ("basic", "stealth", "enhanced", "auto")
PII_ENTITIES = ("PERSON", "EMAIL", "PHONE", "LOCATION", "FINANCIAL", "SECRET")
# JSON extraction: bounds on what the model is asked, as Firecrawl sets them.
EXTRACTION_PROMPT_MAX = 10_000
EXTRACTION_SCHEMA_MAX_BYTES = 64 * 1024


class StrictMixin:
    # Reject keys the object does not define, naming each one. A comment, not
    # a docstring: drf-spectacular would publish a docstring as the
    # description of every serializer that mixes it in.

    allow_extra: tuple[str, ...] = ()

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            _refuse_unknown_keys(data, {*self.fields, *self.allow_extra})  # type: ignore[attr-defined]
        return super().to_internal_value(data)  # type: ignore[misc]


class PassThroughMixin:
    # Validate the known keys; keep unknown ones as given (Firecrawl's
    # catchall). A comment for the reason StrictMixin's is one.

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


_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """An option's name as Python spells it: onlyMainContent -> only_main_content,
    regexOnFullURL -> regex_on_full_url."""
    return _WORD_START.sub("_", name).lower()


def api_names(data: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """`data` with every key that is the snake_case spelling of one of
    `names` under that name; other keys as they are. Given in both spellings,
    the API's wins: it is what a client that read the options back, or the
    dashboard's form, edited (a monitor saved before Python spellings were
    read may still hold the other)."""
    spelled = {snake_case(name): name for name in names}
    spelled = {snake: name for snake, name in spelled.items() if snake != name}
    renamed: dict[str, Any] = {}
    for key, value in data.items():
        name = spelled.get(key, key)
        if name != key and name in data:
            continue
        renamed[name] = value
    return renamed


class PythonNamesMixin:
    # Take an option under its snake_case spelling too, and keep it under its
    # own. firecrawl-py's monitor methods (4.52 to 4.55) send a typed
    # ScrapeOptions as its Python names (only_main_content, wait_for,
    # full_page): kept as unknown keys, they were saved, echoed back and never
    # applied. A comment for the reason StrictMixin's is one.

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = api_names(data, self.fields)  # type: ignore[attr-defined]
        return super().to_internal_value(data)  # type: ignore[misc]


class StrictCharField(serializers.CharField):
    """A JSON string and nothing else: DRF's CharField would quietly turn 42
    into "42", where Firecrawl (and the Python SDK's types) reject it."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON number without a fraction and nothing else: DRF's IntegerField
    would take "30" and true, where Firecrawl's schema (and the SDKs' types)
    reject them. 30.0 is still 30, as in JavaScript."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if isinstance(data, float) and not data.is_integer():
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number and nothing else (not "1.5", not true)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictUUIDField(serializers.UUIDField):
    """A UUID written as a string and nothing else: DRF's UUIDField would
    turn the number 5 into 00000000-0000-0000-0000-000000000005 and true
    into ...0001, where Firecrawl's schema (and the SDKs' types) want a
    string."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """true or false and nothing else: DRF's BooleanField would take "yes",
    "1" and 0."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class UrlField(StrictCharField):
    """A URL Pagewatch may fetch or post to: the URL rule, and the address
    policy for hosts that need no DNS (IP literals, localhost), so a URL that
    can never be reached is refused now rather than failing on every check.
    Host names are judged at connect time (checks.fetch)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", rules.URL_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        url = super().to_internal_value(data)
        if problem := url_problem(url):
            raise ValidationError(problem[1], code=problem[0])
        return url


def url_problem(url: str) -> tuple[str, str] | None:
    """(code, message) when Pagewatch may not fetch or post to `url`: the
    URL rule, then the address policy for hosts that need no DNS. The API's
    URL fields and the dashboard's form both ask this."""
    parsed, error = checked_url(url)
    if parsed is None:
        return "invalid", error or "URL is not valid."
    shown = url if len(url) <= 200 else url[:199] + "…"
    refusal = address_refusal(parsed.host, shown)
    return None if refusal is None else ("blocked_address", refusal)


def address_refusal(host: str, shown: str) -> str | None:
    """The words refusing `shown` when `host` can never be connected to,
    judged without DNS (IP literals and localhost), or None. Every address
    Pagewatch is given (a monitor's URL, a channel's) is refused in these words."""
    allowed = allow_private_targets()
    blocked = host_block_reason(host, allowed)
    if blocked is None:
        return None
    refusal = f"Pagewatch can never connect to {shown}: {blocked}."
    if not allowed and host_block_reason(host, True) is None:
        # Private and local addresses are one setting away (an intranet page);
        # metadata and other reserved ones are refused whatever it says.
        refusal += (
            " For the administrator: set ALLOW_PRIVATE_NETWORK_TARGETS to allow "
            "private and local addresses."
        )
    return refusal


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
        rule = {"key_error": self.key_error, "value_error": self.value_error}
        problems = map_problems((), value, most=self.max_items, **rule)
        if problems and not problems[0].path:
            raise ValidationError(problems[0].message)
        if problems:
            raise ValidationError({p.path[0]: [p.message] for p in problems})
        return value


def string_list(
    max_items: int,
    item_max: int = 256,
    child: type[StrictCharField] = StrictCharField,
    **kwargs: Any,
) -> serializers.ListField:
    return serializers.ListField(
        child=child(max_length=item_max), max_length=max_items, **kwargs
    )


class PathPatternField(StrictCharField):
    """An includePaths/excludePaths entry: a pattern RE2 can compile. A field,
    so every bad entry of both lists is reported at once, beside any other
    field's error."""

    def to_internal_value(self, data: Any) -> str:
        pattern = super().to_internal_value(data)
        try:
            rules.path_pattern(pattern)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        return pattern


class CssSelectorField(StrictCharField):
    """An includeTags/excludeTags entry: a selector the page cleaner can read."""

    def to_internal_value(self, data: Any) -> str:
        selector = super().to_internal_value(data)
        problem = rules.css_selector_error(selector)
        if problem:
            raise ValidationError(problem)
        return selector


class ViewportSerializer(StrictMixin, serializers.Serializer):
    width = StrictIntegerField(min_value=1, max_value=rules.SCREENSHOT_WIDTH_MAX)
    height = StrictIntegerField(min_value=1, max_value=rules.SCREENSHOT_HEIGHT_MAX)


class ScreenshotSerializer(PythonNamesMixin, PassThroughMixin, serializers.Serializer):
    """The screenshot format, and the screenshot action (same options)."""

    type = serializers.ChoiceField(choices=("screenshot",))
    fullPage = StrictBooleanField(required=False)
    quality = StrictIntegerField(required=False, min_value=1, max_value=100)
    viewport = ViewportSerializer(required=False)


def _api_format(name: Any, names: Iterable[str]) -> Any:
    """A format's name as the API spells it, given in that spelling or in
    Python's (raw_html, change_tracking: see PythonNamesMixin)."""
    if not isinstance(name, str):
        return name
    return {snake_case(known): known for known in names}.get(name, name)


class FormatField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str):
            named = _api_format(data, OBJECT_FORMATS)
            if named in OBJECT_FORMATS and named not in STRING_FORMATS:
                # As Firecrawl reads every string format: "changeTracking" is
                # {"type": "changeTracking"}; "json" says what it needs.
                return self.to_internal_value({"type": named})
            data = _api_format(data, STRING_FORMATS)
            if data not in STRING_FORMATS:
                raise ValidationError(
                    f"Unknown format '{data[:40]}'. "
                    f"Use one of: {', '.join(STRING_FORMATS)}."
                )
            return data
        if isinstance(data, Mapping):
            kind = _api_format(data.get("type"), OBJECT_FORMATS)
            if kind not in OBJECT_FORMATS:
                raise ValidationError(
                    f"Format objects need a type among: {', '.join(OBJECT_FORMATS)}."
                )
            data = {**data, "type": kind}
            if kind not in OPTION_FORMATS:
                return _plain_format(data)
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
            _check_format_keys(data)
            _check_extraction(data)
            return dict(data)
        raise ValidationError("Must be a format name or a format object.")


def _refuse_unknown_keys(data: Iterable[str], allowed: Iterable[str]) -> None:
    """Every key of the API's objects that is not theirs is refused, each by
    name in one shape (``{"foo": ["Unknown field."]}``, said as
    ``….foo: Unknown field.``), so a client reads one error for all."""
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ValidationError({key: ["Unknown field."] for key in unknown})


def _plain_format(fmt: dict[str, Any]) -> dict[str, Any]:
    """A format without options as an object: its type and nothing else, as
    Firecrawl's strict objects have it."""
    _refuse_unknown_keys(fmt, {"type"})
    return fmt


def _check_format_keys(fmt: Mapping[str, Any]) -> None:
    """Firecrawl's strict format objects: only the keys it defines, and
    checkPromptInjection and tag of its types (null too: the Python SDK sends
    an unset field as null). The extraction's keys: _check_extraction."""
    _refuse_unknown_keys(fmt, {"type", *FORMAT_KEYS[fmt["type"]]})
    if fmt.get("checkPromptInjection") not in (None, True, False):
        raise ValidationError({"checkPromptInjection": ["Must be true or false."]})
    if not isinstance(fmt.get("tag"), str | None):
        raise ValidationError({"tag": ["Must be a string or null."]})


def _check_extraction(fmt: Mapping[str, Any]) -> None:
    """A json format, or changeTracking's json mode, says what to extract: a
    JSON Schema (required for changeTracking) and/or a prompt."""
    kind = fmt.get("type")
    json_mode = kind == "changeTracking" and "json" in (fmt.get("modes") or [])
    if kind != "json" and not json_mode:
        return
    schema, prompt = fmt.get("schema"), fmt.get("prompt")
    if prompt is not None and (
        not isinstance(prompt, str) or len(prompt) > EXTRACTION_PROMPT_MAX
    ):
        raise ValidationError(
            f"prompt must be a string of at most {EXTRACTION_PROMPT_MAX} characters."
        )
    if schema is None:
        if json_mode:
            raise ValidationError("changeTracking's json mode requires a schema.")
        if not prompt:
            raise ValidationError("A json format needs a schema or a prompt.")
        return
    if not isinstance(schema, Mapping):
        raise ValidationError("schema must be a JSON Schema object.")
    if len(json.dumps(schema)) > EXTRACTION_SCHEMA_MAX_BYTES:
        raise ValidationError(
            f"schema must be at most {EXTRACTION_SCHEMA_MAX_BYTES // 1024} KB."
        )
    if error := rules.schema_reference_error(schema):
        raise ValidationError(error)
    import jsonschema  # here: only saving a monitor with a schema needs it

    try:
        patterns.validator_class(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValidationError(
            f"schema is not a valid JSON Schema: {exc.message}"
        ) from None
    if error := rules.schema_dangling_reference_error(schema):
        raise ValidationError(error)
    if error := rules.schema_reference_loop_error(schema):
        raise ValidationError(error)
    if error := rules.schema_pattern_error(schema):
        raise ValidationError(error)
    if error := rules.schema_unevaluated_properties_error(schema):
        raise ValidationError(error)


PDF_MODES = ("fast", "auto", "ocr")
PDF_MAX_PAGES = 10_000


class ParserField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if data == "pdf":
            return data
        if not isinstance(data, Mapping) or data.get("type") != "pdf":
            raise ValidationError('Parsers must be "pdf" or {"type": "pdf"}.')
        pages = data.get("maxPages")
        if pages is not None and (
            isinstance(pages, bool)
            or not isinstance(pages, int)
            or not 1 <= pages <= PDF_MAX_PAGES
        ):
            raise ValidationError(
                f"maxPages must be a whole number from 1 to {PDF_MAX_PAGES}."
            )
        if data.get("mode") not in (None, *PDF_MODES):
            raise ValidationError('mode must be "fast", "auto" or "ocr".')
        return data


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
    milliseconds = StrictIntegerField(
        required=False, min_value=1, max_value=rules.WAIT_TOTAL_MAX_MS
    )
    selector = _selector(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("milliseconds" in attrs) == ("selector" in attrs):
            raise ValidationError({"milliseconds": [BOTH_OR_NEITHER]})
        return attrs


class ClickAction(_Action):
    selector = _selector()
    all = StrictBooleanField(required=False)


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
    landscape = StrictBooleanField(required=False)
    # Chromium prints at 10 % to 200 %.
    scale = StrictFloatField(required=False, min_value=0.1, max_value=2)
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


class ProfileSerializer(PythonNamesMixin, StrictMixin, serializers.Serializer):
    name = StrictCharField(max_length=128)
    saveChanges = StrictBooleanField(required=False)


class ThreatProtectionSerializer(PythonNamesMixin, StrictMixin, serializers.Serializer):
    mode = StrictCharField(required=False, max_length=32)
    riskScoreThreshold = StrictIntegerField(required=False, min_value=0, max_value=100)
    blacklist = string_list(100, required=False)
    whitelist = string_list(100, required=False)
    blockedTlds = string_list(100, 63, required=False)
    failurePolicy = StrictCharField(required=False, max_length=32)


class RedactPIISerializer(PythonNamesMixin, StrictMixin, serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=("accurate", "aggressive", "fast"), required=False
    )
    entities = serializers.ListField(
        child=serializers.ChoiceField(choices=PII_ENTITIES),
        required=False,
        max_length=len(PII_ENTITIES),
    )
    replaceStyle = serializers.ChoiceField(
        choices=("tag", "mask", "remove"), required=False
    )


class RedactPIIField(serializers.JSONField):
    """true or false, or the object that tunes the redaction, as Firecrawl
    (and firecrawl-py's RedactPIIOptions) has it."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool):
            return data
        if isinstance(data, Mapping):
            return RedactPIISerializer().run_validation(data)
        raise ValidationError("Must be true, false or an object.")


class AuditMetadataSerializer(StrictMixin, serializers.Serializer):
    username = StrictCharField(max_length=256, required=False)


class ScrapeOptionsSerializer(
    PythonNamesMixin, PassThroughMixin, serializers.Serializer
):
    formats = serializers.ListField(child=FormatField(), required=False, max_length=20)
    onlyMainContent = StrictBooleanField(required=False)
    onlyCleanContent = StrictBooleanField(required=False)
    includeTags = string_list(
        rules.TAGS_MAX, rules.TAG_MAX, CssSelectorField, required=False
    )
    excludeTags = string_list(
        rules.TAGS_MAX, rules.TAG_MAX, CssSelectorField, required=False
    )
    maxAge = StrictIntegerField(required=False, min_value=0)
    minAge = StrictIntegerField(required=False, min_value=0)
    headers = StringMapField(
        max_items=rules.WEBHOOK_HEADERS_MAX,
        required=False,
        key_error=rules.header_name_error,
        value_error=rules.header_value_error,
    )
    waitFor = StrictIntegerField(
        required=False, min_value=0, max_value=rules.WAIT_FOR_MAX
    )
    mobile = StrictBooleanField(required=False)
    skipTlsVerification = StrictBooleanField(required=False)
    timeout = StrictIntegerField(
        required=False, min_value=rules.TIMEOUT_MIN, max_value=rules.TIMEOUT_MAX
    )
    parsers = serializers.ListField(child=ParserField(), required=False, max_length=5)
    actions = serializers.ListField(child=ActionField(), required=False)
    location = LocationSerializer(required=False)
    removeBase64Images = StrictBooleanField(required=False)
    blockAds = StrictBooleanField(required=False)
    proxy = serializers.ChoiceField(choices=PROXIES, required=False)
    storeInCache = StrictBooleanField(required=False)
    lockdown = StrictBooleanField(required=False)
    redactPII = RedactPIIField(required=False)
    profile = ProfileSerializer(required=False)
    threatProtection = ThreatProtectionSerializer(required=False)
    auditMetadata = AuditMetadataSerializer(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        error = rules.actions_error(attrs.get("waitFor"), attrs.get("actions"))
        if error is not None:
            option, rule = error
            raise ValidationError({option: [rule.api]}, code=rule.code)
        formats = attrs.get("formats") or []
        shots = [f for f in formats if f == "screenshot" or _typed(f, "screenshot")]
        if len(shots) > 1:
            raise ValidationError(
                {"formats": ["You may only specify one screenshot format."]}
            )
        return attrs


# Every scrapeOptions key the API validates; others are kept as given.
SCRAPE_OPTION_NAMES = frozenset(ScrapeOptionsSerializer().fields)


def unknown_options(options: Mapping[str, Any], known: Iterable[str]) -> list[str]:
    """The keys of `options` outside `known` that ask for something (any
    value but false or null), sorted: Firecrawl passes unknown options
    through, so they are kept, and nothing here acts on them."""
    known = frozenset(known)
    return sorted(k for k, v in options.items() if k not in known and is_set(v))


def is_set(value: Any) -> bool:
    """An option asks for something: false and null ask for nothing."""
    return value is not None and value is not False


def _typed(value: Any, kind: str) -> bool:
    return isinstance(value, Mapping) and value.get("type") == kind


class CrawlOptionsSerializer(
    PythonNamesMixin, PassThroughMixin, serializers.Serializer
):
    limit = StrictIntegerField(
        required=False,
        min_value=rules.CRAWL_LIMIT_MIN,
        max_value=rules.CRAWL_LIMIT_MAX,
    )
    maxDiscoveryDepth = StrictIntegerField(
        required=False, min_value=0, max_value=rules.CRAWL_DEPTH_MAX
    )
    maxDepth = StrictIntegerField(required=False, min_value=0, max_value=100)
    includePaths = string_list(
        rules.PATHS_MAX, rules.PATH_MAX, PathPatternField, required=False
    )
    excludePaths = string_list(
        rules.PATHS_MAX, rules.PATH_MAX, PathPatternField, required=False
    )
    regexOnFullURL = StrictBooleanField(required=False)
    crawlEntireDomain = StrictBooleanField(required=False)
    allowSubdomains = StrictBooleanField(required=False)
    allowExternalLinks = StrictBooleanField(required=False)
    sitemap = serializers.ChoiceField(
        choices=("skip", "include", "only"), required=False
    )
    ignoreQueryParameters = StrictBooleanField(required=False)
    deduplicateSimilarURLs = StrictBooleanField(required=False)
    delay = StrictFloatField(required=False, min_value=0, max_value=60)
    maxConcurrency = StrictIntegerField(required=False, min_value=1, max_value=100)
