"""Page content without Django: what a fetched body is, its source and
Markdown, its metadata, the diff of two versions and the stored snapshot.

Modules, lowest first: ``source`` (what a check stores, and its Markdown),
``options``, ``sniff``, ``metadata``, ``clean``, ``html``, ``ocr``, ``pdf``,
``extract`` (the entry point); ``compare`` (same vs changed, line matching), ``render``
(HTML), ``diff`` (Firecrawl's diff shapes), ``fields`` (JSON extractions
compared field by field), ``noise`` (a monitor's lines to ignore),
``change_rules`` (which of a page's changes matter to its monitor's rules);
``snapshots`` (the stored form). Each imports only the ones before it;
import the public names from here. ``readable`` (a page's Markdown as HTML
for reading) is the dashboard's alone: imported from its own module, so a
worker never loads markdown-it.
"""

from __future__ import annotations

from checks.content.change_rules import ChangeRules, set_aside_reason
from checks.content.compare import content_hash, normalize
from checks.content.diff import compare_texts, diff_ast, pack_diff, unpack_diff
from checks.content.extract import as_read, extract
from checks.content.fields import field_diff
from checks.content.html import page_links
from checks.content.noise import strip_noise
from checks.content.render import (
    mark_quotes,
    render_inline,
    render_side_by_side,
    with_columns,
)
from checks.content.snapshots import (
    Pack,
    diff_reference,
    pack_snapshot,
    packed_against,
    snapshot_hash,
    unpack,
)
from checks.content.sniff import media_type_of
from checks.content.source import (
    SOURCE_HTML,
    SOURCE_MARKDOWN,
    Extracted,
    ExtractionError,
    OutOfTimeError,
    markdown_of,
)

__all__ = [
    "ChangeRules",
    "set_aside_reason",
    "SOURCE_HTML",
    "SOURCE_MARKDOWN",
    "Extracted",
    "ExtractionError",
    "OutOfTimeError",
    "Pack",
    "compare_texts",
    "content_hash",
    "diff_ast",
    "diff_reference",
    "packed_against",
    "pack_diff",
    "unpack_diff",
    "as_read",
    "extract",
    "media_type_of",
    "field_diff",
    "mark_quotes",
    "markdown_of",
    "normalize",
    "pack_snapshot",
    "page_links",
    "render_inline",
    "render_side_by_side",
    "snapshot_hash",
    "strip_noise",
    "unpack",
    "with_columns",
]
