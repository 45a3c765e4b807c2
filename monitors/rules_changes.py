"""Which changes matter: a monitor's change rules (the API's `changeRules`, a
Pagewatch extension), checked by the same rules for the API's serializer and
the dashboard's form, and said in words for the monitor's page.

Three rules, each optional; a change of a page matters only when it meets
every one that is set:

* `lines`: which line changes count, "added", "removed" or "any" (a changed
  line is one removed and one added);
* `containing`: words or phrases one of those lines must contain;
* `appears` / `disappears`: a text the page's new text has and its old one
  had not / had and the new one has not (either, when both are set).

A text is matched as the noise rule matches a line (monitors.rules, "The
noise rule"): plain text anywhere in a line, whatever its case, or an RE2
pattern between slashes. checks.content.change_rules applies them, before
the AI judge, to every changed page.

Stored as the cleaned object (`clean`), None when no rule is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitors import rules
from monitors.rules_problems import Problem, items_problems, text_problems

LINES = ("any", "added", "removed")
LINES_ANY = "any"
CONTAINING_MAX = 20
TEXT_MAX = rules.IGNORE_LINE_MAX
KEYS = ("lines", "containing", "appears", "disappears")


def text_error(entry: str) -> str | None:
    """Why a text of a rule cannot be used (fit to show a user), or None; a
    blank one is no rule, and is dropped when cleaned."""
    return rules.ignore_line_error(entry) if entry.strip() else None


def problems(value: Mapping[str, Any]) -> list[Problem]:
    """What is wrong with change rules in the API's shape (keys left out are
    not set), at paths inside the object: first the bounds (a choice, sizes
    and lengths), then, once those hold, each text's pattern (as the API's
    serializer checks them field by field, then as a whole)."""
    found: list[Problem] = []
    lines = value.get("lines", LINES_ANY)
    if lines not in LINES:
        found.append(
            Problem(
                ("lines",),
                "invalid_choice",
                f"{lines!r} is not a choice: use any, added or removed.",
            )
        )
    containing = list(value.get("containing") or [])
    found += items_problems(
        ("containing",), containing, most=CONTAINING_MAX, longest=TEXT_MAX
    )
    texts = {key: value.get(key) or "" for key in ("appears", "disappears")}
    for key, text in texts.items():
        found += text_problems((key,), text, TEXT_MAX, blank=True)
    if found:
        return found
    patterns: list[tuple[tuple[str | int, ...], str]] = [
        (("containing", index), text) for index, text in enumerate(containing)
    ]
    patterns += [((key,), text) for key, text in texts.items()]
    found = [
        Problem(path, "invalid", message)
        for path, text in patterns
        if (message := text_error(text))
    ]
    if not found and (message := together_error(containing)):
        found.append(Problem(("containing",), "invalid", message))
    return found


def together_error(containing: list[str]) -> str | None:
    """Why the words' patterns, each usable alone, cannot be used together
    (they are searched as one), or None."""
    bodies = [
        f"(?:{body})"
        for text in containing
        if (body := rules.ignore_line_regex(text)) is not None
    ]
    if len(bodies) < 2:
        return None
    try:
        rules.path_pattern("|".join(bodies))
    except ValueError:
        return (
            "These patterns are too large to use together: "
            "use fewer of them, or shorter ones."
        )
    return None


def clean(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The rules as stored: texts trimmed, blank ones dropped, each word kept
    once; None when no rule is set (every change counts, as without)."""
    if not value:
        return None
    containing = rules.clean_ignore_lines(value.get("containing") or [])
    stored: dict[str, Any] = {
        "lines": value.get("lines") or LINES_ANY,
        "containing": containing,
        "appears": (value.get("appears") or "").strip() or None,
        "disappears": (value.get("disappears") or "").strip() or None,
    }
    if (
        stored["lines"] == LINES_ANY
        and not containing
        and not stored["appears"]
        and not stored["disappears"]
    ):
        return None
    return stored


def _quoted(texts: list[str]) -> str:
    shown = [f"“{text}”" for text in texts]
    if len(shown) < 2:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " or " + shown[-1]


def lines_words(lines: str) -> str:
    """Which lines count, as the monitor's page and the reasons say it."""
    return {"added": "added lines", "removed": "removed lines"}.get(
        lines, "added or removed lines"
    )


def words(stored: Mapping[str, Any] | None) -> list[str]:
    """The rules in plain words, one sentence each; [] when none is set."""
    if not stored:
        return []
    said = []
    lines = stored.get("lines") or LINES_ANY
    containing = list(stored.get("containing") or [])
    if lines != LINES_ANY and not containing:
        said.append(f"Only changes with {lines_words(lines)} count.")
    if containing:
        said.append(
            f"Only changes whose {lines_words(lines)} contain "
            f"{_quoted(containing)} count."
        )
    appears, disappears = stored.get("appears"), stored.get("disappears")
    if appears and disappears:
        said.append(
            f"Only changes where “{appears}” appears on the page or "
            f"“{disappears}” disappears from it count."
        )
    elif appears:
        said.append(f"Only changes where “{appears}” appears on the page count.")
    elif disappears:
        said.append(
            f"Only changes where “{disappears}” disappears from the page count."
        )
    return said
