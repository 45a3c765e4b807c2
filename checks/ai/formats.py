"""What a target's scrapeOptions.formats ask of the model.

* ``{"type": "json", "schema", "prompt"}``, or ``changeTracking`` with the
  ``json`` mode: extract an object per page and compare it field by field
  (JSON mode: a Markdown-only change is ``same``);
* ``changeTracking`` with both ``json`` and ``git-diff``: mixed mode, changed
  when either the fields or the Markdown changed;
* ``"summary"`` / ``{"type": "summary"}``: a short summary of each page.

The schema is tightened as Firecrawl does before it is sent: every property
required, no other properties, and a top-level array (or any non-object)
wrapped as ``{"items": …}``, so the answer is always an object.

Pure: no Django, no network.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

WRAPPED_KEY = "items"


def tighten(schema: Any) -> dict[str, Any]:
    """The schema sent to the model and checked against its answer."""
    if not isinstance(schema, Mapping):
        return {"type": "object"}
    tightened = _tighten(schema)
    if _is_object(tightened):
        return tightened
    return {
        "type": "object",
        "properties": {WRAPPED_KEY: tightened},
        "required": [WRAPPED_KEY],
        "additionalProperties": False,
    }


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (kind is None and "properties" in schema)


def _tighten(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        out["type"] = out.get("type", "object")
        out["properties"] = {
            name: _tighten(sub) if isinstance(sub, Mapping) else sub
            for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    items = schema.get("items")
    if isinstance(items, Mapping):
        out["items"] = _tighten(items)
    for keyword in ("anyOf", "oneOf", "allOf"):
        options = schema.get(keyword)
        if isinstance(options, list):
            out[keyword] = [
                _tighten(o) if isinstance(o, Mapping) else o for o in options
            ]
    for keyword in ("$defs", "definitions"):
        defs = schema.get(keyword)
        if isinstance(defs, Mapping):
            out[keyword] = {
                k: _tighten(v) if isinstance(v, Mapping) else v for k, v in defs.items()
            }
    return out


@dataclass(frozen=True)
class Extraction:
    """A JSON extraction to run on each page."""

    schema: dict[str, Any]  # tightened
    prompt: str
    # The user gave a schema (else only a prompt: any object will do).
    has_schema: bool

    @property
    def key(self) -> str:
        """Identifies what was asked: an extraction is reused for an unchanged
        page only when it was made for the same schema and prompt."""
        canonical = json.dumps(
            [self.schema, self.prompt], sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Wants:
    extraction: Extraction | None = None
    # Mixed mode: the Markdown is compared too (changeTracking git-diff + json).
    markdown_too: bool = False
    summary: bool = False

    @property
    def model_formats(self) -> bool:
        return self.extraction is not None or self.summary


def _extraction(fmt: Mapping[str, Any]) -> Extraction:
    schema = fmt.get("schema")
    prompt = fmt.get("prompt")
    return Extraction(
        schema=tighten(schema),
        prompt=prompt.strip() if isinstance(prompt, str) else "",
        has_schema=isinstance(schema, Mapping),
    )


def wants(options: Mapping[str, Any]) -> Wants:
    formats = options.get("formats")
    extraction: Extraction | None = None
    git_diff = summary = False
    for fmt in formats if isinstance(formats, list) else []:
        name = fmt.get("type") if isinstance(fmt, Mapping) else fmt
        if name == "summary":
            summary = True
        elif name == "json" and isinstance(fmt, Mapping):
            extraction = extraction or _extraction(fmt)
        elif name == "changeTracking" and isinstance(fmt, Mapping):
            modes = fmt.get("modes") or []
            modes = modes if isinstance(modes, list) else []
            if "json" in modes:
                extraction = extraction or _extraction(fmt)
            git_diff = git_diff or "git-diff" in modes
    return Wants(
        extraction, markdown_too=bool(extraction) and git_diff, summary=summary
    )
