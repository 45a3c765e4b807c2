"""A monitor's change rules applied: whether a changed page's change matters,
decided without the AI judge (the rules and their words: monitors.rules_changes).

The judge stage asks `set_aside_reason` for every changed page of a monitor
with rules, before the AI judge is asked anything: a change the rules set
aside is recorded as not meaningful with the reason in plain words, and the
judge never sees it (JSON extraction and summaries still run); one they let
through goes on to the judge when the monitor has a goal, and counts as
meaningful otherwise. A page watched as JSON only is not decided by them
(checks.ai.stage takes their verdict back: its change is its fields').

Lines are read from the page's unified diff (the noise rule's lines already
out): a changed line is one removed and one added, blank lines never count.
Whether the page has a text is read from the whole compared text of both
sides, one line at a time, as the noise rule matches lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from checks.content.noise import NoiseRule, line_rule
from monitors.rules_changes import LINES_ANY, lines_words


@dataclass(frozen=True)
class ChangeRules:
    """A monitor's stored change rules, as the pipeline carries them."""

    lines: str = LINES_ANY
    containing: tuple[str, ...] = ()
    appears: str = ""
    disappears: str = ""

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> ChangeRules | None:
        """The rules a monitor stores (Monitor.change_rules); None for none."""
        if not isinstance(stored, Mapping):
            return None
        rules = cls(
            lines=str(stored.get("lines") or LINES_ANY),
            containing=tuple(str(t) for t in stored.get("containing") or ()),
            appears=str(stored.get("appears") or ""),
            disappears=str(stored.get("disappears") or ""),
        )
        return None if rules == cls() else rules

    @property
    def reads_whole_text(self) -> bool:
        """Whether deciding needs both sides' whole text, not the diff alone."""
        return bool(self.appears or self.disappears)


def changed_lines(diff_text: str) -> tuple[list[str], list[str]]:
    """(added, removed) lines of a unified diff, without their marks; blank
    ones left out."""
    added: list[str] = []
    removed: list[str] = []
    in_hunk = False
    for line in diff_text.split("\n"):
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line[1:].strip():
            if line.startswith("+"):
                added.append(line[1:])
            elif line.startswith("-"):
                removed.append(line[1:])
    return added, removed


def _has(rule: NoiseRule | None, text: str) -> bool:
    return rule is not None and rule.found_in(text)


def set_aside_reason(
    rules: ChangeRules, diff_text: str, texts: tuple[str, str] | None = None
) -> str | None:
    """Why the rules set this change aside, in plain words; None when it
    matters to them. `texts` (the compared text of both sides, before and
    after) are read only when rules.reads_whole_text: without them the
    rule about a text appearing or disappearing lets the change through."""
    added, removed = changed_lines(diff_text)
    if rules.lines == "added":
        counted, other = added, "removed"
    elif rules.lines == "removed":
        counted, other = removed, "added"
    else:
        counted, other = added + removed, ""
    told = f"this monitor tells of {lines_words(rules.lines)} only"
    if rules.lines != LINES_ANY and not counted:
        if added if other == "added" else removed:
            return f"Only lines were {other}; {told}."
        return f"No line was {rules.lines}; {told}."
    if rules.containing and not _has(line_rule(rules.containing), "\n".join(counted)):
        words = ", ".join(f"“{text}”" for text in rules.containing)
        return (
            f"None of the {lines_words(rules.lines)} contains any of {words}; "
            "this monitor tells only of changes that do."
        )
    if rules.reads_whole_text and texts is not None:
        before, after = texts
        return _presence_reason(rules, before, after)
    return None


def _presence_reason(rules: ChangeRules, before: str, after: str) -> str | None:
    said = []
    if rules.appears:
        rule = line_rule([rules.appears])
        had, has = _has(rule, before), _has(rule, after)
        if not had and has:
            return None
        where = "was on the page already" if had else "is not on it"
        said.append(f"“{rules.appears}” did not appear (it {where})")
    if rules.disappears:
        rule = line_rule([rules.disappears])
        had, has = _has(rule, before), _has(rule, after)
        if had and not has:
            return None
        where = "is still on the page" if has else "was not on it"
        said.append(f"“{rules.disappears}” did not disappear (it {where})")
    when = "that happens" if len(said) == 1 else "one of them happens"
    return f"{'; '.join(said)}; this monitor tells only when {when}."
