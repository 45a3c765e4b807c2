"""The diff of a changed page in Firecrawl's shapes:
git-style unified text plus the parse-diff AST the SDKs expect, and
``compare_texts``, everything the check runner needs for a changed page.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from checks.content.compare import Opcode, Side, opcodes, sides_and_hashes
from checks.content.snapshots import (
    pack_against,
    pack_bytes,
    packed_against,
    unpack_against,
    unpack_bytes,
)

# Unchanged lines shown around each change, as git shows them.
_CONTEXT = 3


def _blank_only(code: Opcode, a: list[int], b: list[int]) -> bool:
    _, i1, i2, j1, j2 = code
    return not any(a[i1:i2]) and not any(b[j1:j2])


def _grouped(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """Hunks as in ``difflib.SequenceMatcher.get_grouped_opcodes``."""
    if not codes or (len(codes) == 1 and codes[0][0] == "equal"):
        return []
    codes = list(codes)
    tag, i1, i2, j1, j2 = codes[0]
    if tag == "equal":
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    tag, i1, i2, j1, j2 = codes[-1]
    if tag == "equal":
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _hunk_header(group: list[Opcode]) -> str:
    i1, i2 = group[0][1], group[-1][2]
    j1, j2 = group[0][3], group[-1][4]
    # Counts always printed, as jsdiff does. Unified-diff quirk (GNU, jsdiff):
    # an empty range starts at the line before it.
    old_start = i1 + 1 if i2 > i1 else i1
    new_start = j1 + 1 if j2 > j1 else j1
    return f"@@ -{old_start},{i2 - i1} +{new_start},{j2 - j1} @@"


def _unified_text(old: Side, new: Side, codes: list[Opcode]) -> str:
    """Git-style unified diff, ``""`` when nothing but whitespace changed.

    Lines are compared in normalised form; context lines are printed from the
    current text. Hunks whose only changes are blank lines are left out (like
    ``git diff --ignore-blank-lines``).
    """
    out = ["--- previous", "+++ current"]
    for group in _grouped(codes, _CONTEXT):
        if all(
            tag == "equal" or _blank_only((tag, i1, i2, j1, j2), old.keys, new.keys)
            for tag, i1, i2, j1, j2 in group
        ):
            continue
        out.append(_hunk_header(group))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(" " + line for line in new.lines[j1:j2])
                continue
            out.extend("-" + line for line in old.lines[i1:i2])
            out.extend("+" + line for line in new.lines[j1:j2])
    if len(out) == 2:
        return ""
    return "\n".join(out) + "\n"


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def diff_ast(diff_text: str) -> dict[str, Any]:
    """The parse-diff AST of a unified diff, the shape the SDKs expect.

    Hunk bodies are read by the counts in their headers, so a page line that
    starts with ``---`` or ``+++`` is never mistaken for a file header.
    """
    files: list[dict[str, Any]] = []
    file: dict[str, Any] | None = None
    hunk: _Hunk | None = None
    for line in diff_text.split("\n"):
        if hunk is not None and hunk.is_open() and hunk.take(line):
            continue
        if line.startswith("--- "):
            file = {
                "from": _file_name(line[4:]),
                "to": None,
                "chunks": [],
                "deletions": 0,
                "additions": 0,
            }
            files.append(file)
            hunk = None
        elif line.startswith("+++ ") and file is not None:
            file["to"] = _file_name(line[4:])
        elif (match := _HUNK.match(line)) and file is not None:
            hunk = _Hunk.start(file, line, match)
    return {"files": files}


@dataclass
class _Hunk:
    """One hunk being read: its chunk in the AST, the lines its header says
    are still to come, and the line numbers the next lines get."""

    file: dict[str, Any]
    chunk: dict[str, Any]
    old_left: int
    new_left: int
    ln_del: int
    ln_add: int

    @classmethod
    def start(cls, file: dict[str, Any], line: str, match: re.Match[str]) -> _Hunk:
        old_start, old_lines, new_start, new_lines = match.groups()
        chunk = {
            "content": line,
            "oldStart": int(old_start),
            # parse-diff reads a missing count as 1 ("@@ -3 +3 @@").
            "oldLines": int(old_lines) if old_lines is not None else 1,
            "newStart": int(new_start),
            "newLines": int(new_lines) if new_lines is not None else 1,
            "changes": [],
        }
        file["chunks"].append(chunk)
        return cls(
            file, chunk, chunk["oldLines"], chunk["newLines"],
            chunk["oldStart"], chunk["newStart"],
        )  # fmt: skip

    def is_open(self) -> bool:
        return self.old_left > 0 or self.new_left > 0

    def take(self, line: str) -> bool:
        """Add the line to the hunk if it is one of its lines."""
        marker = line[:1]
        if marker == "+":
            change = {"type": "add", "add": True, "ln": self.ln_add, "content": line}
            self.ln_add, self.new_left = self.ln_add + 1, self.new_left - 1
            self.file["additions"] += 1
        elif marker == "-":
            change = {"type": "del", "del": True, "ln": self.ln_del, "content": line}
            self.ln_del, self.old_left = self.ln_del + 1, self.old_left - 1
            self.file["deletions"] += 1
        elif marker == " " or line == "":
            change = {
                "type": "normal",
                "normal": True,
                "ln1": self.ln_del,
                "ln2": self.ln_add,
                "content": line or " ",
            }
            self.ln_del, self.old_left = self.ln_del + 1, self.old_left - 1
            self.ln_add, self.new_left = self.ln_add + 1, self.new_left - 1
        else:
            return False
        self.chunk["changes"].append(change)
        return True


def _file_name(value: str) -> str:
    name = value.split("\t", 1)[0].strip()
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return name


def compare_texts(
    previous: str, current: str
) -> tuple[str, str, dict[str, Any] | None]:
    """``(content_hash(previous), content_hash(current), diff)``, the diff only
    when the hashes differ (None when they are equal): what the check runner
    needs for a page whose source changed, normalising each text once. The
    dashboard renders its HTML from the two snapshots when someone looks."""
    old, new, (before, after) = sides_and_hashes(previous, current)
    if before == after:
        return before, after, None
    codes = opcodes(old.keys, new.keys)
    text = _unified_text(old, new, codes)
    diff = {"text": text, "json": diff_ast(text)} if text else None
    return before, after, diff


# Stands in a stored diff for a "json" that is the AST of its own "text":
# derived again when read, so it is never stored twice. A field diff (JSON
# mode) is an object, never this string.
_AST = "ast-of-text"


def pack_diff(
    diff: dict[str, Any] | None, reference: bytes | None = None
) -> bytes | None:
    """A page's diff as stored: compressed, without what its text implies;
    against `reference` (snapshots.diff_reference) when given."""
    if diff is None:
        return None
    stored = dict(diff)
    found = stored.get("json")
    if (
        isinstance(found, dict)
        and "files" in found
        and isinstance(stored.get("text"), str)
    ):
        stored["json"] = _AST
    if reference is None:
        return pack_bytes(json.dumps(stored, separators=(",", ":")).encode())
    # Page text left unescaped, so its lines match the reference's.
    raw = json.dumps(stored, separators=(",", ":"), ensure_ascii=False).encode()
    return pack_against(raw, reference)


def unpack_diff(data: bytes, reference: bytes | None = None) -> dict[str, Any]:
    """The diff `pack_diff` stored, key for key as it was given. Raises
    ValueError when it was packed against a reference and this is not it."""
    if packed_against(data):
        if reference is None:
            raise ValueError("this diff is read against its snapshots")
        raw = unpack_against(data, reference)
    else:
        raw = unpack_bytes(data)
    diff: dict[str, Any] = json.loads(raw)
    if diff.get("json") == _AST:
        diff["json"] = diff_ast(diff["text"])
    return diff
