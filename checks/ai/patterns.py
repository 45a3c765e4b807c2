"""The JSON Schema validator answers are checked with: the draft the schema
names in `$schema` (draft-07, 2019-09...; 2020-12 when it names none), its
`pattern` and `patternProperties` matched with RE2, also where
`additionalProperties` asks which keys `patternProperties` took.

jsonschema matches them with Python's `re`, which backtracks: a pattern such
as `^(a+)+$` against a long near-match takes time doubling with each
character, and the strings matched are the model's answer, which the page
it read can steer. RE2 takes linear time, as for crawl paths and the noise
rule (monitors.rules.path_pattern). Saved schemas hold only patterns RE2
reads; a pattern saved before that rule, which RE2 cannot read, is not
enforced rather than matched with `re`. jsonschema's `unevaluatedProperties`
would also match `patternProperties` with `re`, so a schema with both is
refused (monitors.rules.schema_unevaluated_properties_error), and one saved
before that is never used (checks.ai.client.LLM.ask).
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


def validator_class(schema: Mapping[str, Any]) -> Any:
    """The validator class for `schema`: its draft's rules, as `$schema`
    names them, so a draft-07 schema's `items: [...]` is a list of places
    and its `dependencies` are kept. A `$schema` that names no draft is
    refused when saved; a schema without one is read as 2020-12."""
    import jsonschema

    dialect = schema.get("$schema")
    base = jsonschema.Draft202012Validator
    if isinstance(dialect, str):
        base = jsonschema.validators.validator_for(schema, default=base)
    return _with_re2_patterns(base)


@functools.cache
def _with_re2_patterns(base: Any) -> Any:
    import jsonschema

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

    return jsonschema.validators.extend(
        base,
        {
            "pattern": pattern,
            "patternProperties": pattern_properties,
            "additionalProperties": additional_properties,
        },
    )
