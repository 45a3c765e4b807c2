"""What a fetched body is (HTML, text, PDF or binary) and how to decode it.

Headers lie: servers send login pages as PDFs and everything as
``application/octet-stream``, so the bytes have the last word.
"""

from __future__ import annotations

import codecs
import re

_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_TEXT_TYPES = {
    "application/json",
    "application/ld+json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/rss+xml",
    "application/atom+xml",
    "application/x-ndjson",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/csv",
}
_BINARY_PREFIXES = ("image/", "audio/", "video/", "font/", "model/")
# body_kind reads no further than this: a body's first SNIFF_BYTES tell its
# kind as the whole body would. A page fetch asks it once the decoded body
# reaches SNIFF_BYTES (at the end of the first decoded piece at or past it),
# and reads no more of a file.
SNIFF_BYTES = 4096
_KIND_WORDS = {
    "image/": "an image",
    "audio/": "audio",
    "video/": "a video",
    "font/": "a font",
}
# WHATWG maps these labels to windows-1252; pages labelled latin-1 routinely
# contain curly quotes in the 0x80-0x9F range.
_CHARSET_ALIASES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252"}
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE
)


def media_type_of(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().lower()
    label = _CHARSET_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _bom_codec(body: bytes) -> str | None:
    if body.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def decode(body: bytes, content_type: str, *, html: bool) -> str:
    """BOM, then the header's charset, then ``<meta charset>``, then UTF-8,
    then windows-1252 (what browsers fall back to)."""
    codec = _bom_codec(body)
    if codec is None:
        match = _CHARSET_PARAM.search(content_type)
        codec = _codec(match.group(1)) if match else None
    if codec is None and html:
        match = _META_CHARSET.search(body[:4096])
        codec = _codec(match.group(1).decode("ascii", "replace")) if match else None
        # A page that was transcoded to UTF-16 by a proxy still says utf-16 in
        # its meta tag, but without a BOM the bytes are ASCII-compatible.
        if codec and codec.startswith("utf-16"):
            codec = "utf-8"
        if codec is not None:
            codec = _checked_meta_codec(body, codec)
    if codec is None:
        codec = _undeclared_codec(body)
    return body.decode(codec, errors="replace")


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _undeclared_codec(body: bytes) -> str:
    # Decoding Latin-1 bytes as UTF-8 would turn every accented letter into
    # the same U+FFFD, so "café" -> "cafè" would never be seen as a change.
    return "utf-8" if _is_utf8(body) else "cp1252"


def _checked_meta_codec(body: bytes, codec: str) -> str:
    """The page's own <meta> label, unless the bytes plainly contradict it:
    templates keep an old label after the site moved to UTF-8, or the
    reverse. The header's charset is never second-guessed."""
    if codec == "utf-8":
        return codec if _is_utf8(body) else "cp1252"
    if codec in _SINGLE_BYTE and not body.isascii() and _is_utf8(body):
        return "utf-8"
    return codec


_SINGLE_BYTE = frozenset(
    {"cp1252", "iso8859-1", "iso8859-15", "iso8859-2", "cp1250", "cp1251", "ascii"}
)


def _looks_like_html(head: bytes) -> bool:
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body")) or (
        start.startswith(b"<")
        and (b"<html" in head.lower() or b"<body" in head.lower())
    )


def _looks_binary(head: bytes) -> bool:
    return b"\x00" in head and _bom_codec(head) != "utf-16"


def body_kind(body: bytes, media_type: str) -> str:
    """One of ``pdf``, ``html``, ``text`` or ``binary``."""
    head = body[:1024]
    if b"%PDF-" in head:  # the spec lets junk precede the header
        return "pdf"
    if media_type == "application/pdf":
        # Servers send login or error pages with the PDF's content type.
        return "html" if _looks_like_html(head) else "pdf"
    if media_type in _HTML_TYPES:
        return "html"
    if media_type.startswith(_BINARY_PREFIXES):
        return "binary"
    if _is_text_type(media_type):
        return "text"
    # Missing or generic types (application/octet-stream): trust the bytes.
    if _looks_like_html(head):
        return "html"
    if not _looks_binary(head):
        try:
            body[:SNIFF_BYTES].decode("utf-8")
        except UnicodeDecodeError as exc:
            # A multi-byte character cut in two at SNIFF_BYTES is still text.
            if exc.start < SNIFF_BYTES - 6:
                return "binary"
        return "text"
    return "binary"


def is_document_type(media_type: str) -> bool:
    """Whether a Content-Type names something we read as a page (HTML,
    text, JSON or XML, PDF); images, archives, ``application/octet-stream``
    and a missing type do not."""
    return (
        media_type in _HTML_TYPES
        or media_type == "application/pdf"
        or _is_text_type(media_type)
    )


def _is_text_type(media_type: str) -> bool:
    """Whether a Content-Type names text we read as it is: text/*, JSON, XML
    and the like (+json, +xml)."""
    return (
        media_type.startswith("text/")
        or media_type in _TEXT_TYPES
        or media_type.endswith(("+json", "+xml"))
    )


def binary_message(media_type: str) -> str:
    for prefix, words in _KIND_WORDS.items():
        if media_type.startswith(prefix):
            return f"The page is {words} ({media_type}); nothing to compare"
    label = media_type or "unknown content type"
    return f"The page is binary content ({label}); nothing to compare"
