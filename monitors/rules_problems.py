"""What a broken rule is, wherever it is found: a `Problem` at a key path of
the monitor's API object, with a code and the rule's own words; and the
bounds a value is held to (a text's length, a list's size, a number's range,
a choice).

The API's serializers hold the same bounds in their fields (built from the
limits in monitors.rules) and word them as the contract does; the dashboard's
form checks its values with the functions here and words each problem by its
code (monitors.dashboard.forms.words). The codes are the ones DRF gives the
same failures, so a problem reads the same from either side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One broken rule: where (`path`, as in the API's JSON), which (`code`:
    a monitors.rules.Rule's code or DRF's for the same failure) and what its
    rule says (`message`)."""

    path: Path
    code: str
    message: str

    def under(self, *prefix: str | int) -> Problem:
        return Problem((*prefix, *self.path), self.code, self.message)


def problems_in(detail: Any, path: Path = ()) -> list[Problem]:
    """Nested errors (dicts by key or index, lists of messages that carry a
    `code`, as DRF reports them) as a flat list of problems, in order."""
    if isinstance(detail, Mapping):
        found = []
        for key, value in detail.items():
            inner = path if key == "non_field_errors" else (*path, key)
            found.extend(problems_in(value, inner))
        return found
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [_problem(path, item) for item in detail]
        found = []
        for index, item in enumerate(detail):
            if item:
                found.extend(problems_in(item, (*path, index)))
        return found
    return [_problem(path, detail)]


def _problem(path: Path, message: Any) -> Problem:
    return Problem(path, str(getattr(message, "code", "invalid")), str(message))


# --- Bounds --------------------------------------------------------------------


def text_problems(
    path: Path, value: str, max_length: int, *, blank: bool = False
) -> list[Problem]:
    """A text, trimmed: given unless `blank` may be empty, at most
    `max_length` characters, without a NUL (which no database column holds)."""
    text = value.strip()
    if not text:
        return [] if blank else [Problem(path, "blank", "This may not be blank.")]
    found = []
    if len(text) > max_length:
        found.append(Problem(path, "max_length", f"At most {max_length:,} characters."))
    if "\x00" in text:
        found.append(Problem(path, "null_characters_not_allowed", "No NUL characters."))
    return found


def items_problems(
    path: Path,
    items: list[str],
    *,
    most: int,
    longest: int,
    least: int = 0,
    each: Callable[[str], str | None] | None = None,
) -> list[Problem]:
    """A list of texts: each at most `longest` characters and passing `each`
    (reported at its index, every one at once); then between `least` and
    `most` of them."""
    found = []
    for index, item in enumerate(items):
        bounded = text_problems((*path, index), item, longest, blank=True)
        if not bounded and each is not None and (message := each(item)):
            bounded.append(Problem((*path, index), "invalid", message))
        found += bounded
    if found:
        return found
    return count_problems(path, items, least=least, most=most)


def count_problems(
    path: Path, items: list[Any] | Mapping[str, Any], *, least: int = 0, most: int
) -> list[Problem]:
    if len(items) < least:
        return [Problem(path, "min_length", f"At least {least}.")]
    if len(items) > most:
        return [Problem(path, "max_length", f"At most {most}.")]
    return []


def whole_problems(path: Path, value: Any, low: int, high: int) -> list[Problem]:
    """A whole number from `low` to `high` (30.0 is 30, "30" is text)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return [Problem(path, "invalid", "A whole number is required.")]
    if value < low:
        return [Problem(path, "min_value", f"At least {low:,}.")]
    if value > high:
        return [Problem(path, "max_value", f"At most {high:,}.")]
    return []


def choice_problems(path: Path, value: Any, choices: Iterable[str]) -> list[Problem]:
    if value not in tuple(choices):
        return [Problem(path, "invalid_choice", f"{value!r} is not a choice.")]
    return []


def map_problems(
    path: Path,
    mapping: Mapping[str, str],
    *,
    most: int,
    key_error: Callable[[str], str | None] | None = None,
    value_error: Callable[[str, str], str | None] | None = None,
) -> list[Problem]:
    """Names and values (headers, metadata): at most `most` of them, then
    each name and value by its rules, reported at its name."""
    if len(mapping) > most:
        return [Problem(path, "invalid", f"At most {most} entries are allowed.")]
    found = []
    for key, item in mapping.items():
        message = (key_error and key_error(key)) or (
            value_error and value_error(key, item)
        )
        if message:
            found.append(Problem((*path, key), "invalid", message))
    return found


# --- Values no column can keep ----------------------------------------------------


def unstorable_problem(document: Any) -> Problem | None:
    """The first value of a JSON document, in document order, that no
    database column can keep: a string holding U+0000, which PostgreSQL's text
    and jsonb refuse, or a lone surrogate, which is not UTF-8 at all (every
    answer holding it would fail to render); or a number past a double's
    range (1e999), which Python's JSON parser reads as infinity and no JSON
    column or answer can hold. For a key, the path of its object: the key
    itself cannot be written back. Typed fields refuse all of these, but
    option objects keep unknown keys and values as given, so a whole document
    (an API body, an imported monitor) is checked before any of it is saved.
    Walked with a stack: a document may nest as deep as its parser allows."""
    stack: list[tuple[Path, Any]] = [((), document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if problem := _unstorable(path, value):
                return problem
        elif isinstance(value, float) and not math.isfinite(value):
            return Problem(path, "invalid", "This number is too large to store.")
        elif isinstance(value, dict):
            for key in value:
                if isinstance(key, str) and (problem := _unstorable(path, key)):
                    return problem
            stack.extend(((*path, k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))
    return None


def _unstorable(path: Path, text: str) -> Problem | None:
    # DRF's own words and codes for a typed field, which the dashboard's words
    # know too.
    if "\x00" in text:
        return Problem(
            path, "null_characters_not_allowed", "Null characters are not allowed."
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return Problem(
            path,
            "surrogate_characters_not_allowed",
            f"Surrogate characters are not allowed: U+{ord(text[exc.start]):X}.",
        )
    return None
