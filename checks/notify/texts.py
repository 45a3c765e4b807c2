"""The plain pieces every message Pagewatch writes is made of: the template
engine for text parts and subjects, header-safe one-liners and safe links (a
link's address comes from monitors.links.public_url, as every link given out).

The HTML part goes through Django's autoescaping engine; the plain-text part
and the subject through a twin engine without HTML escaping (they are not
HTML; escaping would only print `&amp;`). Links are only made from http(s)
URLs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache, lru_cache
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template import Context, Engine
from django.template.loader import render_to_string
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

SUBJECT_MAX = 200

LINE_BREAKS = re.compile(r"[\r\n\t\x00-\x1f\x7f\u2028\u2029\x85]+")


@cache
def _text_engine() -> Engine:
    return Engine(
        dirs=[str(d) for d in settings.TEMPLATES[0]["DIRS"]],
        app_dirs=True,
        autoescape=False,
    )


def render_text(template_name: str, context: dict[str, Any]) -> str:
    template = _text_engine().get_template(template_name)
    return template.render(Context(context, autoescape=False))


def one_line(text: str, limit: int = SUBJECT_MAX) -> str:
    """Header-safe: no line breaks or control characters, bounded length."""
    flat = LINE_BREAKS.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def http_href(url: str | None) -> str | None:
    """Only http(s) URLs become links; anything else is shown as text."""
    if url and url.lower().startswith(("http://", "https://")):
        return url
    return None


def linked(
    text: str,
    links: Iterable[str],
    words: Callable[[str], str] = str,
    anchor: Callable[[str], SafeString] | None = None,
) -> SafeString:
    """Plain text as HTML: escaped, with the given http(s) addresses (a
    message's own links) made links where they stand alone. Any other
    address in the text, one a judge's reason or a page quotes, stays text.
    `words` changes the text between links before it is escaped, and
    `anchor` builds the link of an address, so the links are found in the
    text as written."""
    found = _links_pattern(frozenset(links))
    if found is None:
        return escape(words(text))
    parts, start = [], 0
    for match in found.finditer(text):
        parts.append(escape(words(text[start : match.start()])))
        parts.append((anchor or _anchor)(match[1]))
        start = match.end()
    parts.append(escape(words(text[start:])))
    # Every part was escaped or built by format_html.
    return mark_safe("".join(parts))  # noqa: S308


@lru_cache(maxsize=64)
def _links_pattern(links: frozenset[str]) -> re.Pattern[str] | None:
    # Built once per set of links: a message is made HTML a line at a time,
    # and a digest names hundreds of links on hundreds of lines.
    hrefs = sorted({href for href in links if http_href(href)}, key=len, reverse=True)
    if not hrefs:
        return None
    return re.compile(
        r"(?<![^\s(])(" + "|".join(map(re.escape, hrefs)) + r")(?=[\s),.:;]|$)"
    )


def _anchor(href: str) -> SafeString:
    return format_html('<a href="{0}">{0}</a>', href)


def message(
    *,
    subject: str,
    to: str,
    text_template: str,
    html_template: str,
    context: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> EmailMultiAlternatives:
    email = EmailMultiAlternatives(
        subject=one_line(subject),
        body=render_text(text_template, context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers={"Auto-Submitted": "auto-generated", **(headers or {})},
    )
    email.attach_alternative(render_to_string(html_template, context), "text/html")
    return email
