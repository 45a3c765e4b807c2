"""The JSON Schema validator answers are checked with: Draft 2020-12, its
`pattern` and `patternProperties` matched with RE2, also where
`unevaluatedProperties` asks which keys `patternProperties` took.

jsonschema matches them with Python's `re`, which backtracks: a pattern such
as `^(a+)+$` against a long near-match takes time doubling with each
character, and the strings matched are the model's answer, which the page
it read can steer. RE2 takes linear time, as for crawl paths and the noise
rule (monitors.rules.path_pattern). Saved schemas hold only patterns RE2
reads; a pattern saved before that rule, which RE2 cannot read, is not
enforced rather than matched with `re`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from monitors import rules


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    try:
        return rules.path_pattern(pattern)
    except ValueError:
        return None


def matches(pattern: str, text: str) -> bool:
    """Whether `pattern` is found in `text`, as JSON Schema's regexes are
    (unanchored); True for a pattern RE2 cannot read (see the docstring)."""
    compiled = _compiled(pattern)
    return compiled is None or compiled.search(text) is not None


@functools.cache
def validator_class() -> Any:
    import jsonschema
    from jsonschema._utils import extras_msg

    base = jsonschema.Draft202012Validator
    additional = base.VALIDATORS["additionalProperties"]

    def pattern(validator: Any, patrn: Any, instance: Any, schema: Any) -> Iterator:
        if validator.is_type(instance, "string") and not matches(patrn, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(
        validator: Any, patterns: Any, instance: Any, schema: Any
    ) -> Iterator:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                if matches(patrn, key):
                    yield from validator.descend(
                        value, subschema, path=key, schema_path=patrn
                    )

    def additional_properties(
        validator: Any, allowed: Any, instance: Any, schema: Any
    ) -> Iterator:
        patterns = schema.get("patternProperties")
        if isinstance(patterns, Mapping) and validator.is_type(instance, "object"):
            # The keys a pattern takes are named, so the keyword itself
            # never matches a pattern with `re`.
            named = dict(schema.get("properties") or {})
            named |= {
                key: True
                for key in instance
                if any(matches(patrn, key) for patrn in patterns)
            }
            schema = {k: v for k, v in schema.items() if k != "patternProperties"} | {
                "properties": named
            }
        yield from additional(validator, allowed, instance, schema)

    def unevaluated_properties(
        validator: Any, unevaluated: Any, instance: Any, schema: Any
    ) -> Iterator:
        # jsonschema's own, but with the keys taken found by _evaluated_keys.
        if not validator.is_type(instance, "object"):
            return
        evaluated = set(_evaluated_keys(validator, instance, schema))
        extras = [
            key
            for key, value in instance.items()
            if key not in evaluated
            and next(validator.descend(value, unevaluated, path=key), None) is not None
        ]
        if not extras:
            return
        if unevaluated is False:
            names, verb = extras_msg(sorted(extras, key=str))
            yield jsonschema.ValidationError(
                f"Unevaluated properties are not allowed ({names} {verb} unexpected)"
            )
        else:
            names, verb = extras_msg(extras)
            yield jsonschema.ValidationError(
                "Unevaluated properties are not valid under the given schema "
                f"({names} {verb} unevaluated and invalid)"
            )

    return jsonschema.validators.extend(
        base,
        {
            "pattern": pattern,
            "patternProperties": pattern_properties,
            "additionalProperties": additional_properties,
            "unevaluatedProperties": unevaluated_properties,
        },
    )


def _evaluated_keys(validator: Any, instance: Any, schema: Any) -> list[str]:
    """The keys of `instance` that `schema` evaluates, for
    `unevaluatedProperties`: jsonschema's
    `_utils.find_evaluated_property_keys_by_schema` (4.26), which matches
    `patternProperties` with Python's `re`, with `matches()` instead."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    for ref in (schema.get("$ref"), schema.get("$dynamicRef")):
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            keys += _evaluated_keys(
                validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                instance,
                resolved.contents,
            )
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(keyword)) is not None:
            keys += (
                key
                for key, value in instance.items()
                if next(validator.descend(value, subschema), None) is None
            )
    for patrn in schema.get("patternProperties") or ():
        keys += (key for key in instance if matches(patrn, key))
    for key, subschema in (schema.get("dependentSchemas") or {}).items():
        if key in instance:
            keys += _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if next(validator.descend(instance, subschema), None) is None:
                keys += _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys += _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys += _evaluated_keys(validator, instance, schema["else"])
    return keys
