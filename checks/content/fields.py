"""Field-by-field comparison of two JSON extractions, in Firecrawl's shape.

``field_diff(previous, current)`` lists every leaf that differs, keyed by its
path (``plans[1].price``), as ``{"previous": …, "current": …}``:

* objects are compared key by key, whatever their order; a key present on one
  side only is reported with ``None`` on the other;
* arrays are compared index by index; extra items are reported the same way;
* when the kinds differ (an object against a string, say), the whole subtree
  is reported at that path;
* strings are equal when they are after Unicode composition (NFC), with
  zero-width characters dropped and whitespace runs collapsed and trimmed, so
  an extraction that re-spaces a sentence is not a change;
* ``true`` is never equal to ``1``, although Python says so.
"""

from __future__ import annotations

from typing import Any

from checks.content.compare import normalize

FieldDiff = dict[str, dict[str, Any]]


def _same_string(a: str, b: str) -> bool:
    if a == b:
        return True
    return _normal(a) == _normal(b)


def _normal(text: str) -> str:
    # normalize() composes, drops invisible characters and collapses runs per
    # line; a field compares as one line.
    return " ".join(normalize(text).split())


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(previous: Any, current: Any, path: str, out: FieldDiff) -> None:
    kind = _kind(previous)
    if kind != _kind(current):
        out[path] = {"previous": previous, "current": current}
        return
    if kind == "object":
        for key in dict.fromkeys([*previous, *current]):
            _walk(previous.get(key), current.get(key), _join(path, str(key)), out)
        return
    if kind == "array":
        for index in range(max(len(previous), len(current))):
            before = previous[index] if index < len(previous) else None
            after = current[index] if index < len(current) else None
            _walk(before, after, f"{path}[{index}]", out)
        return
    equal = _same_string(previous, current) if kind == "string" else previous == current
    if not equal:
        out[path] = {"previous": previous, "current": current}


def field_diff(previous: Any, current: Any) -> FieldDiff:
    """Each differing leaf of two extractions, by path; ``{}`` when equal."""
    out: FieldDiff = {}
    _walk(previous, current, "", out)
    if "" in out:  # two top-level values of different kinds
        return {"": out[""]}
    return out
