"""The API's one request body parser: JSON, refusing strings that cannot be
stored or sent back.

JSON may spell a lone UTF-16 surrogate ("\\ud800"); Python parses it into a
str that cannot be encoded as UTF-8. It may also spell U+0000 ("\\u0000"),
which PostgreSQL cannot keep in a jsonb or text column. Typed fields refuse
both, but option objects keep unknown keys as given, so one such string would
be saved (a surrogate: every later answer holding it, the monitor and the
whole list, would fail to render) or fail the save itself (a NUL: a 500 from
the database). Refusing them here, anywhere in the body, keeps every field
safe.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.parsers import JSONParser


class JsonParser(JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        data = super().parse(stream, media_type, parser_context)
        found = _first_unstorable(data)
        if found is not None:
            path, problem = found
            raise ValidationError(_nested(path, problem))
        return data


Path = list[str | int]


def _first_unstorable(data: Any) -> tuple[Path, ErrorDetail] | None:
    """The path of the first string, in document order, holding a character
    that cannot be stored, and why; for a key, the path of its object (the
    key itself cannot be written back). Walked with a stack: the body may
    nest as deep as the JSON parser allows."""
    stack: list[tuple[Path, Any]] = [([], data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            problem = _unstorable(value)
            if problem:
                return path, problem
        elif isinstance(value, dict):
            for key in value:
                problem = _unstorable(key)
                if problem:
                    return path, problem
            stack.extend(([*path, k], v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(([*path, i], v) for i, v in reversed(list(enumerate(value))))
    return None


def _unstorable(text: str) -> ErrorDetail | None:
    if "\x00" in text:
        # DRF's own words and code for a typed field, which the dashboard's
        # words know too.
        return ErrorDetail(
            "Null characters are not allowed.", code="null_characters_not_allowed"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return ErrorDetail(
            f"Surrogate characters are not allowed: U+{ord(text[exc.start]):X}.",
            code="surrogate_characters_not_allowed",
        )
    return None


def _nested(path: Path, problem: ErrorDetail) -> Any:
    """DRF's error shape for `problem` at `path`, so the API names the field."""
    detail: Any = [problem]
    for part in reversed(path):
        detail = {part: detail}
    return detail
