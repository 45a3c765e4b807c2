"""The noise rule's syntax: which entries a monitor's "ignore lines" may hold.

Shared by the API serializers, the dashboard forms and the comparison that
applies the rule (checks.content.noise), so they can never disagree.

An entry is plain text, matched case-insensitively anywhere in a line, or a
regular expression between slashes (``/\\d+ views/``). Regular expressions are
RE2's (no look-around, no back-references): their matching time is linear in
the input, so a user's pattern can never stall a worker on a hostile page.
"""

from __future__ import annotations

import re2

ENTRIES_MAX = 50
ENTRY_MAX = 300


def regex_body(entry: str) -> str | None:
    """The pattern of a ``/.../`` entry, None for plain text."""
    if len(entry) >= 3 and entry.startswith("/") and entry.endswith("/"):
        return entry[1:-1]
    return None


def compile_regex(pattern: str) -> re2._Regexp:
    options = re2.Options()
    options.log_errors = False  # a user's typo is reported to them, not logged
    return re2.compile(pattern, options)


def entry_error(entry: str) -> str | None:
    """Why an entry cannot be used (a message fit to show a user), or None."""
    if not entry.strip():
        return "Empty entries are not allowed."
    if len(entry) > ENTRY_MAX:
        return f"Each entry must be at most {ENTRY_MAX} characters."
    body = regex_body(entry.strip())
    if body is None:
        return None
    try:
        compile_regex(body)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"Not a valid regular expression: {reason or 'unreadable'}."
    return None
