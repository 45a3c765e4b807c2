"""A page's Markdown as readable HTML for the dashboard's "Text" view:
headings, paragraphs, lists, quotes, code and tables (a price list reads as a
table, not as rows of pipes).

Everything a page wrote is text here: raw HTML is escaped by the parser
(``html`` off), links show their words without a target and images their
description, so no page-derived URL, attribute or markup reaches the browser,
and table alignment becomes a class rather than an inline style (which the
Content-Security-Policy refuses). Safe to ``mark_safe``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

# Pure-Python parsing is slow per character (tables the most), so past this
# many characters the rest of a copy is left to the Markdown source view.
READABLE_MAX_CHARS = 60_000

# A link target may hold one level of parentheses: [x](https://a/b_(c)).
_TARGET = r"\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)"
_IMAGE = re.compile(r"!\[([^\]]*)\]" + _TARGET)
_LINK = re.compile(r"\[([^\]]+)\]" + _TARGET)
_ALIGN = re.compile(r"text-align:\s*(left|center|right)")

# Block structure and emphasis only: no link, image, autolink or HTML rules,
# so none of those can produce markup (their source is shown as text).
_RULES = [
    "table", "code", "fence", "blockquote", "hr", "list", "heading", "lheading",
    "paragraph", "text", "newline", "escape", "backticks", "emphasis",
    "strikethrough", "entity",
]  # fmt: skip


def _cell_open(
    self: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    token = tokens[idx]
    style = str(token.attrs.pop("style", ""))
    if match := _ALIGN.search(style):
        token.attrSet("class", f"align-{match[1]}")
    return self.renderToken(tokens, idx, options, env)


def _table_open(self: RendererHTML, *_: Any) -> str:
    # A wide table scrolls on its own instead of stretching the page.
    return '<div class="md-table"><table>\n'


def _table_close(self: RendererHTML, *_: Any) -> str:
    return "</table></div>\n"


# The page's own headings sit inside the dashboard's page, below its <h1> and
# <h2> sections: shifted two levels down, the outline stays one document.
HEADING_SHIFT = 2


def _heading(
    self: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    token = tokens[idx]
    token.tag = f"h{min(int(token.tag[1]) + HEADING_SHIFT, 6)}"
    return self.renderToken(tokens, idx, options, env)


def _parser() -> MarkdownIt:
    parser = MarkdownIt("zero", {"html": False, "linkify": False}).enable(_RULES)
    parser.add_render_rule("th_open", _cell_open)
    parser.add_render_rule("td_open", _cell_open)
    parser.add_render_rule("table_open", _table_open)
    parser.add_render_rule("table_close", _table_close)
    parser.add_render_rule("heading_open", _heading)
    parser.add_render_rule("heading_close", _heading)
    return parser


_PARSER = _parser()


def readable_html(markdown: str) -> tuple[str, bool]:
    """(HTML, cut): the page as readable HTML, and whether it stops before
    the end of a copy longer than READABLE_MAX_CHARS."""
    cut = len(markdown) > READABLE_MAX_CHARS
    text = markdown[:READABLE_MAX_CHARS]
    text = _IMAGE.sub(lambda m: f"[image: {m[1]}]" if m[1] else "", text)
    text = _LINK.sub(r"\1", text)
    return _PARSER.render(text), cut
