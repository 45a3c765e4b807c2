"""The API's one request body parser: JSON, refusing strings that cannot be
stored or sent back.

JSON may spell a lone UTF-16 surrogate ("\\ud800"); Python parses it into a
str that cannot be encoded as UTF-8. Typed fields refuse it, but option
objects keep unknown keys as given, so one such string would be saved and
every later answer holding it (the monitor, the whole list) would fail to
render. Refusing it here, anywhere in the body, keeps every field safe.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.parsers import JSONParser


class JsonParser(JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        data = super().parse(stream, media_type, parser_context)
        found = _first_surrogate(data)
        if found is not None:
            path, char = found
            raise ValidationError(
                _nested(
                    path,
                    f"Surrogate characters are not allowed: U+{ord(char):X}.",
                )
            )
        return data


Path = list[str | int]


def _first_surrogate(data: Any) -> tuple[Path, str] | None:
    """The path of the first string, in document order, holding a lone
    surrogate, and that character; for a key, the path of its object (the key
    itself cannot be written back). Walked with a stack: the body may nest as
    deep as the JSON parser allows."""
    stack: list[tuple[Path, Any]] = [([], data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            char = _surrogate(value)
            if char:
                return path, char
        elif isinstance(value, dict):
            for key in value:
                char = _surrogate(key)
                if char:
                    return path, char
            stack.extend(([*path, k], v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(([*path, i], v) for i, v in reversed(list(enumerate(value))))
    return None


def _surrogate(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return text[exc.start]
    return None


def _nested(path: Path, message: str) -> Any:
    """DRF's error shape for `message` at `path`, so the API names the field."""
    detail: Any = [message]
    for part in reversed(path):
        detail = {part: detail}
    return detail
