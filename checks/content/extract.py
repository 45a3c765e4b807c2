"""Turn a fetched response body into the text Pagewatch compares.

``extract()`` takes the raw bytes of a page plus a Firecrawl ``scrapeOptions``
mapping (camelCase keys) and returns its source (see checks.content.source),
optional cleaned/raw HTML, links, images and metadata. It is pure: no Django
models, no network, no clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from checks.content.html import extract_html
from checks.content.metadata import base_metadata
from checks.content.options import Options, parse_options
from checks.content.pdf import extract_pdf
from checks.content.sniff import binary_message, body_kind, decode, media_type_of
from checks.content.source import Extracted, ExtractionError


def extract(
    body: bytes,
    *,
    content_type: str,
    url: str,
    options: Mapping[str, Any],
    guess: Callable[[], str] | None = None,
) -> Extracted:
    """Extract comparable Markdown (and the requested formats) from ``body``.

    Raises ``ExtractionError`` when there is no text to compare: images and
    other binary bodies, unreadable PDFs, or PDFs with PDF parsing turned off.
    `guess`: the response's own encoding guess (see sniff.decode).
    """
    opts = parse_options(options or {})
    media_type = media_type_of(content_type or "")
    kind = body_kind(body, media_type)
    if kind == "pdf":
        return extract_pdf(body, content_type or "application/pdf", url, opts)
    if kind == "binary":
        raise ExtractionError(binary_message(media_type))
    if kind == "text":
        return _extract_text(body, content_type, media_type, url, opts, guess)
    return extract_html(body, content_type or "text/html", url, opts, guess)


def _extract_text(
    body: bytes,
    content_type: str,
    media_type: str,
    url: str,
    opts: Options,
    guess: Callable[[], str] | None,
) -> Extracted:
    text = decode(body, content_type, html=False, url=url, guess=guess)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = as_read(media_type, text)
    return Extracted(
        source=text,
        raw_html=text if "rawHtml" in opts.formats else None,
        links=[] if "links" in opts.formats else None,
        images=[] if "images" in opts.formats else None,
        metadata=base_metadata(content_type or media_type or "text/plain", url),
    )


def as_read(media_type: str, text: str) -> str:
    """A text body laid out the way it is compared and shown: JSON indented
    with its keys sorted, XML one element a line; other text as it is."""
    if media_type == "application/json" or media_type.endswith("+json"):
        return pretty_json(text)
    if media_type in _XML_TYPES or (
        media_type.endswith("+xml") and media_type != "application/xhtml+xml"
    ):
        return one_element_a_line(text)
    return text


_XML_TYPES = {"application/xml", "text/xml"}
_CDATA = re.compile(r"(<!\[CDATA\[.*?\]\]>)", re.S)
_ADJACENT_TAGS = re.compile(r">[ \t]*<")


def one_element_a_line(text: str) -> str:
    """A feed or other XML document sent on one line would diff as one line
    however little changed: each tag that follows another on the same line
    starts a line of its own. CDATA sections (a post's HTML) are left as
    they are, and so is a document already laid out on lines."""
    parts = _CDATA.split(text)
    for index in range(0, len(parts), 2):
        parts[index] = _ADJACENT_TAGS.sub(">\n<", parts[index])
    return "".join(parts)


def pretty_json(text: str) -> str:
    """Minified JSON is one line; indent it so a change diffs as one line.
    Keys are sorted: an API that sends the same object with its keys in
    another order (a hash map's order, a new serializer) has not changed,
    as changedetection.io and Firecrawl's JSON mode see it too."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # nested past what the parser reads
        return text
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    except RecursionError:  # read, but nested past what the encoder writes
        return text
