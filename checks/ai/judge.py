"""The goal judge: does a changed page's change matter for the
monitor's goal?

The model sees the goal (and the extraction prompt, if any) in its
instructions, and the change -- the unified diff and/or the JSON field diffs,
trimmed to the changed lines that fit the input budget -- inside a data block
(checks.ai.data). Its answer is exactly
``{meaningful, confidence, reason, meaningfulChanges[{type, before, after,
reason}]}``, validated in code; a quote that does not appear verbatim in the
change it was shown is dropped with its entry; the reason is plain text.

It fails open: no model, an error, a time-out or an unusable answer give
``meaningful: true, confidence: "low"`` and a reason that says why, marked as
not judged (`Verdict.judged` False), so the dashboard never shows it as a
verdict and e-mail still goes out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checks.ai.client import LLM, LLMError
from checks.ai.data import DataBlock, clip, fitted, plain_text, weight

REASON_MAX = 1000
CHANGE_REASON_MAX = 500
QUOTE_MAX = 2000
CHANGES_MAX = 20
# Room kept for the instructions around the change, in characters.
_INSTRUCTIONS_ROOM = 3000
_MIN_CHANGE_CHARS = 1000
# Room kept in a trimmed diff for a note on what was left out, in characters.
_NOTE_ROOM = 60
_FIELDS_CUT = "\n[more changed fields not shown]"
# A section that does not fit whole is shown in part when this much room is left.
_MIN_PART_CHARS = 300

_STRING_OR_NULL = {"type": ["string", "null"]}
JUDGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "meaningful": {"type": "boolean"},
        "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
        "reason": {"type": "string"},
        "meaningfulChanges": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": ["added", "removed", "changed"]},
                    "before": _STRING_OR_NULL,
                    "after": _STRING_OR_NULL,
                    "reason": {"type": "string"},
                },
                "required": ["type", "before", "after", "reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["meaningful", "confidence", "reason", "meaningfulChanges"],
    "additionalProperties": False,
}

_SYSTEM = """\
You decide whether a change on a monitored web page matters for its owner's goal.

The owner's goal:
{goal}
{prompt}
{notice}

Rules:
- Only changes relevant to the goal are meaningful. Typical noise is not: \
timestamps, dates of the visit, counters and view counts, tracking parameters, \
formatting and whitespace, navigation, footers, cookie banners, ads; unless the \
goal asks for them.
- meaningful: true when at least one change matters for the goal.
- confidence: "high", "medium" or "low".
- reason: one or two plain sentences in the language of the owner's goal \
(whatever the language of the page), without links or markup.
- meaningfulChanges: one entry per change that matters (an empty list when \
nothing does). type is "added", "removed" or "changed". before and after are \
copied character for character from the change you were shown (the text after \
a line's leading "-" or "+"); before is null for "added", after is null for \
"removed". reason: one short sentence, in the language of the goal too."""


@dataclass(frozen=True)
class Verdict:
    judgment: dict[str, Any]
    # False when the judgment is the fail-open one: shown as "not judged".
    judged: bool
    # True when the change was too long to show whole: judged on what fit.
    partial: bool = False


def not_judged(why: str) -> Verdict:
    """The fail-open judgment: alert, and say plainly that nothing was judged."""
    reason = plain_text(f"Not judged: {why}", REASON_MAX)
    return Verdict(
        {
            "meaningful": True,
            "confidence": "low",
            "reason": reason,
            "meaningfulChanges": [],
        },
        judged=False,
    )


# --- What the model is shown -------------------------------------------------------


def _hunks(diff_text: str) -> list[list[str]]:
    """The changed lines of each hunk of a unified diff, with its header;
    context lines are dropped (they matter least when space is short)."""
    hunks: list[list[str]] = []
    for line in diff_text.split("\n"):
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks and line[:1] in ("+", "-"):
            hunks[-1].append(line)
    return [hunk for hunk in hunks if len(hunk) > 1]


def _first_lines(
    lines: list[tuple[int, str]], room: int
) -> tuple[list[tuple[int, str]], bool]:
    """The first of `lines` that fit in `room` characters (a first line too
    long alone: its beginning), and whether one was cut."""
    kept: list[tuple[int, str]] = []
    used = 0
    for index, line in lines:
        if used + len(line) + 1 > room:
            if not kept and room > 1:
                kept.append((index, line[: room - 1]))
                return kept, True
            break
        kept.append((index, line))
        used += len(line) + 1
    return kept, False


def _size(lines: list[tuple[int, str]]) -> int:
    return sum(len(line) + 1 for _, line in lines)


def _part_of_hunk(hunk: list[str], room: int) -> str:
    """A hunk too long for `room`: its header, then as many of its removed
    and of its added lines as fit, each side given half (and what the other
    leaves), in the diff's order, and how many were left out. A unified diff
    lists a section's removed lines before its added ones: its beginning
    alone would show what the page said and nothing of what it says now."""
    header, lines = hunk[0], list(enumerate(hunk[1:]))
    room -= len(header) + 1 + _NOTE_ROOM
    removed = [pair for pair in lines if pair[1][:1] == "-"]
    added = [pair for pair in lines if pair[1][:1] == "+"]
    kept_removed, _ = _first_lines(removed, room // 2)
    kept_added, cut_added = _first_lines(added, room - _size(kept_removed))
    kept_removed, cut_removed = _first_lines(removed, room - _size(kept_added))
    kept = sorted(kept_removed + kept_added)
    left_out = len(lines) - len(kept)
    note = (
        f"[{left_out} changed line(s) of this section not shown]"
        if left_out
        else "[the longest changed lines of this section are cut short]"
        if cut_added or cut_removed
        else ""
    )
    return "\n".join([header, *(line for _, line in kept), *([note] if note else [])])


def trim_diff(diff_text: str, max_chars: int) -> str:
    """The diff as it is when it fits, else its changed lines, hunk by hunk,
    as many as fit (the first that does not, in part), saying what was left
    out."""
    return _trimmed(diff_text, max_chars)[0]


def _trimmed(diff_text: str, max_chars: int) -> tuple[str, bool]:
    """trim_diff's text, and whether changed lines were left out (context
    lines dropped to make room are not part of the change)."""
    if len(diff_text) <= max_chars:
        return diff_text, False
    hunks = _hunks(diff_text)
    room = max_chars - _NOTE_ROOM  # for the note on the sections left out
    shown: list[str] = []
    used = 0
    for index, hunk in enumerate(hunks):
        text = "\n".join(hunk)
        if used + len(text) + 1 > room:
            if not shown or room - used >= _MIN_PART_CHARS:
                shown.append(_part_of_hunk(hunk, room - used - 1))
                index += 1
            if len(hunks) > index:
                shown.append(
                    f"[{len(hunks) - index} more changed section(s) not shown]"
                )
            return "\n".join(shown), True
        shown.append(text)
        used += len(text) + 1
    return "\n".join(shown), False


def field_lines(fields: Mapping[str, Any]) -> str:
    """JSON field diffs as lines a quote can be copied from."""
    lines = []
    for path, change in fields.items():
        for sign, key in (("-", "previous"), ("+", "current")):
            value = change.get(key) if isinstance(change, Mapping) else None
            if value is None:
                continue
            shown = value if isinstance(value, str) else json.dumps(value)
            lines.append(f"{sign} {path}: {shown}")
    return "\n".join(lines)


def change_text(
    diff_text: str | None, fields: Mapping[str, Any] | None, max_chars: int
) -> tuple[str, bool]:
    """What the judge is shown of a change, within `max_chars`, and whether
    part of it was left out (the text then says so)."""
    parts = []
    partial = False
    budget = max(max_chars, _MIN_CHANGE_CHARS)
    if fields:
        room = budget // 2 if diff_text else budget
        field_part, cut = clip(field_lines(fields), room - len(_FIELDS_CUT))
        if cut:
            field_part += _FIELDS_CUT
        partial = cut
        parts.append("Changed fields (- before, + after):\n" + field_part)
        budget -= len(parts[0])
    if diff_text:
        trimmed, cut = _trimmed(diff_text, max(budget, _MIN_CHANGE_CHARS))
        partial = partial or cut
        parts.append("Unified diff of the page text (- removed, + added):\n" + trimmed)
    return "\n\n".join(parts), partial


def messages(goal: str, prompt: str, change: str) -> tuple[str, str]:
    """(system, user): the goal and rules outside the data block, the change
    inside it."""
    block = DataBlock.around(change)
    extraction = (
        f"\nThe page's fields were extracted with this instruction:\n{prompt}\n"
        if prompt
        else ""
    )
    system = _SYSTEM.format(goal=goal, prompt=extraction, notice=block.notice)
    user = f"The change:\n{block.wrap(change)}\n\nDoes it matter for the goal?"
    return system, user


# --- What the model said -------------------------------------------------------------


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def _quote(value: Any, shown: str) -> str | None:
    """The quote if it appears verbatim (whitespace aside) in what was shown."""
    if not isinstance(value, str) or not value.strip():
        return None
    quote = value[:QUOTE_MAX]
    return quote if _squeezed(quote) in shown else None


def _change(entry: Mapping[str, Any], shown: str) -> dict[str, Any] | None:
    """A meaningful change whose quotes are all verbatim; None otherwise."""
    kind = entry["type"]
    before = _quote(entry.get("before"), shown)
    after = _quote(entry.get("after"), shown)
    wants_before = kind in ("removed", "changed")
    wants_after = kind in ("added", "changed")
    if (wants_before and before is None) or (wants_after and after is None):
        return None
    if (not wants_before and entry.get("before")) or (
        not wants_after and entry.get("after")
    ):
        return None  # a quote where its type has none: not what was asked
    return {
        "type": kind,
        "before": before if wants_before else None,
        "after": after if wants_after else None,
        "reason": plain_text(str(entry["reason"]), CHANGE_REASON_MAX),
    }


def clean(answer: Mapping[str, Any], change: str) -> dict[str, Any]:
    """A schema-valid answer made safe: quotes checked against the change,
    texts plain and bounded."""
    shown = _squeezed(change)
    meaningful = bool(answer["meaningful"])
    changes = []
    if meaningful:
        for entry in answer["meaningfulChanges"][: CHANGES_MAX * 2]:
            kept = _change(entry, shown)
            if kept is not None:
                changes.append(kept)
    return {
        "meaningful": meaningful,
        "confidence": answer["confidence"],
        "reason": plain_text(str(answer["reason"]), REASON_MAX),
        "meaningfulChanges": changes[:CHANGES_MAX],
    }


async def judge(
    llm: LLM,
    *,
    goal: str,
    prompt: str = "",
    diff_text: str | None,
    fields: Mapping[str, Any] | None,
) -> Verdict:
    """The model's verdict on one change; the fail-open one when it gives none."""
    if not diff_text and not fields:
        return not_judged("the change has no diff to judge.")
    room = (
        llm.config.max_input_chars - weight(goal) - weight(prompt) - _INSTRUCTIONS_ROOM
    )
    change, partial = fitted(lambda chars: change_text(diff_text, fields, chars), room)
    system, user = messages(goal, prompt, change)
    try:
        answer = await llm.ask(
            name="judgment",
            schema=JUDGMENT_SCHEMA,
            system=system,
            user=user,
            # A verdict, a reason and a few quoted lines: less room than an
            # extracted object needs.
            max_output_tokens=llm.config.max_output_tokens // 2,
        )
    except LLMError as exc:
        return not_judged(exc.message)
    return Verdict(clean(answer, change), judged=True, partial=partial)
