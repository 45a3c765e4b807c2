"""The API's one request body parser: JSON, refusing values that cannot be
stored or sent back (monitors.rules_problems.unstorable_problem: a NUL, a lone
surrogate, a number too large for a double), anywhere in the body, before any
field sees them.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.parsers import JSONParser

from monitors.rules_problems import Problem, unstorable_problem


class JsonParser(JSONParser):
    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: dict[str, Any] | None = None,
    ) -> Any:
        data = super().parse(stream, media_type, parser_context)
        problem = unstorable_problem(data)
        if problem is not None:
            raise ValidationError(_nested(problem))
        return data


def _nested(problem: Problem) -> Any:
    """DRF's error shape for `problem` at its path, so the API names the field."""
    detail: Any = [ErrorDetail(problem.message, code=problem.code)]
    for part in reversed(problem.path):
        detail = {part: detail}
    return detail
