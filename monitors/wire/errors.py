"""DRF's nested validation errors as one flat list, each issue with the path
of the field it is about: how the API's 400s, the importer's preview and the
dashboard's words read the wire shapes' objections."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions


def flatten_errors(detail: Any, path: list[str | int] | None = None) -> list[dict]:
    """Turn DRF's nested error structure into a flat list of issues with paths."""
    path = path or []
    if isinstance(detail, dict):
        issues = []
        for key, value in detail.items():
            sub = path if key == "non_field_errors" else [*path, key]
            issues.extend(flatten_errors(value, sub))
        return issues
    if isinstance(detail, list):
        if all(isinstance(item, exceptions.ErrorDetail | str) for item in detail):
            return [
                {
                    "code": getattr(item, "code", "invalid"),
                    "path": path,
                    "message": str(item),
                }
                for item in detail
            ]
        issues = []
        for index, item in enumerate(detail):
            if item:
                issues.extend(flatten_errors(item, [*path, index]))
        return issues
    return [
        {
            "code": getattr(detail, "code", "invalid"),
            "path": path,
            "message": str(detail),
        }
    ]
