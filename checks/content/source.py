"""What a check stores of a page, its *source*, and the Markdown made from it.

The Markdown of an HTML page is a pure function of its source: the cleaned
HTML plus the base URL its links resolve against (``Extracted.source``). A
check stores and compares sources and converts to Markdown only when a page's
source differs from its baseline's (``markdown_of``): the conversion is most of
a page's CPU cost, and most checks find most pages unchanged.

The cleaned HTML goes to html-to-markdown with options pinned for stable
output, because every formatting wobble between two checks would show up as a
change.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from html_to_markdown import ConversionOptions, PreprocessingOptions, convert

# What a stored source holds: final Markdown text (plain text, JSON, PDF text),
# or a header line and cleaned HTML that markdown_of() converts.
SOURCE_MARKDOWN = "markdown"
SOURCE_HTML = "html"


class ExtractionError(Exception):
    """The body cannot be turned into comparable text; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OutOfTimeError(ExtractionError):
    """A PDF whose pictures of pages OCR had no time for at this check
    (checks.content.ocr.OutOfTime): the page keeps its last content and is
    read again at the next check."""


def reason(exc: BaseException) -> str:
    """A library's exception as a short phrase for an ExtractionError message."""
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass
class Extracted:
    """An extracted page. ``source`` (with ``source_format``) is what a check
    stores and compares; ``markdown`` is derived from it on first use."""

    source: str
    source_format: str = SOURCE_MARKDOWN
    html: str | None = None
    raw_html: str | None = None
    links: list[str] | None = None
    images: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def markdown(self) -> str:
        return markdown_of(self.source_format, self.source)


def html_source(html: str, base: str, *, drop_data_images: bool) -> str:
    """Cleaned HTML with what its conversion depends on in a first line, so a
    stored source converts the same way later, wherever it is read."""
    header = json.dumps({"base": base, "dropDataImages": drop_data_images})
    return f"{header}\n{html}"


def markdown_of(source_format: str, source: str) -> str:
    """The Markdown of a source (see Extracted). Raises ExtractionError when
    the converter fails on it."""
    if source_format != SOURCE_HTML:
        return source
    header, _, html = source.partition("\n")
    settings = json.loads(header)
    try:
        return _markdown(
            html, settings["base"], drop_data_images=settings["dropDataImages"]
        )
    except Exception as exc:  # the converter's own error types vary by version
        raise ExtractionError(
            f"The page could not be converted: {reason(exc)}"
        ) from exc


_MARKDOWN_OPTIONS = dict(
    heading_style="atx",
    bullets="-",
    list_indent_width=2,
    strong_em_symbol="*",
    code_block_style="backticks",
    newline_style="backslash",  # no trailing double spaces for <br>
    wrap=False,
    extract_metadata=False,  # metadata comes from our own pass; no front matter
    whitespace_mode="normalized",
    hidden_content="drop",
    autolinks=True,
    # Cleaning is ours and driven by scrapeOptions; the library's own
    # navigation/form stripping would ignore onlyMainContent=false.
    preprocessing=PreprocessingOptions(enabled=False),
)


# Blocks whose line breaks are content; everywhere else a browser folds them.
_PREFORMATTED = re.compile(r"(<pre\b.*?</pre>|<textarea\b.*?</textarea>)", re.S | re.I)


def _fold_source_newlines(html: str) -> str:
    """Fold line breaks of the HTML source into spaces, as a browser renders
    them, so a site that merely re-wraps its source is not reported changed."""
    parts = _PREFORMATTED.split(html)
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("\r", " ").replace("\n", " ")
    return "".join(parts)


def _markdown(html: str, base: str, *, drop_data_images: bool) -> str:
    html = _fold_source_newlines(html)
    options = ConversionOptions(
        **_MARKDOWN_OPTIONS,
        base_url=base,
        inline_data_media="drop_element" if drop_data_images else "keep",
    )
    result = convert(html, options)
    text = result.content or ""
    return text.strip("\n") + "\n" if text.strip() else ""
