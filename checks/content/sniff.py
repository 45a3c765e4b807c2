"""What a fetched body is (HTML, text, PDF or binary) and how to decode it.

Headers lie: servers send login pages as PDFs and everything as
``application/octet-stream``, so the bytes have the last word.
"""

from __future__ import annotations

import codecs
import contextlib
import re
from collections.abc import Callable

from checks.content.guess import guessed_encoding

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
# A label means what browsers read it as (the WHATWG Encoding Standard), not
# what Python's codec of that name reads: pages labelled Shift_JIS, GB2312,
# EUC-KR, Big5 or Latin-1 are written with the superset browsers decode, and
# use its characters (①, 镕, 똠, curly quotes in 0x80-0x9F). First the labels
# Python does not know, then Python's codecs whose browser reading is wider.
_LABELS = {
    "windows-31j": "cp932",
    "x-sjis": "cp932",
    "x-gbk": "gb18030",
    "csgb2312": "gb18030",
    "gb_2312-80": "gb18030",
    "csiso58gb231280": "gb18030",
    "windows-949": "cp949",
    "csksc56011987": "cp949",
    "iso-ir-149": "cp949",
    "ks_c_5601-1989": "cp949",
    "cn-big5": "big5hkscs",
    "x-x-big5": "big5hkscs",
    "windows-874": "cp874",
    "dos-874": "cp874",
    "x-cp1250": "cp1250",
    "x-cp1251": "cp1251",
    "x-cp1252": "cp1252",
    "x-cp1253": "cp1253",
    "x-cp1254": "cp1254",
    "x-cp1255": "cp1255",
    "x-cp1256": "cp1256",
    "x-cp1257": "cp1257",
    "x-cp1258": "cp1258",
    "iso88591": "cp1252",
    "iso8859-1": "cp1252",
    "iso-8859-8-i": "iso8859-8",
    "csiso88598i": "iso8859-8",
    "x-mac-roman": "mac-roman",
    "x-mac-cyrillic": "mac-cyrillic",
    "x-euc-jp": "euc_jp",
    "cseucpkdfmtjapanese": "euc_jp",
    "unicode-1-1-utf-8": "utf-8",
    "unicode11utf8": "utf-8",
    "unicode20utf8": "utf-8",
    "x-unicode20utf8": "utf-8",
}
_WIDER = {
    "ascii": "cp1252",
    "latin-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso8859-9": "cp1254",
    "iso8859-11": "cp874",
    "tis-620": "cp874",
    "shift_jis": "cp932",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
    "big5": "big5hkscs",
}
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE
)
# An XML document (a feed) names its encoding in its first line.
_XML_ENCODING = re.compile(
    rb"""\A(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?\sencoding\s*=\s*["']([\w.:-]+)"""
)


def media_type_of(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().lower()
    label = _LABELS.get(label, label)
    try:
        name = codecs.lookup(label).name
        # Python's codecs include bytes-to-bytes ones (zlib, hex, base64) that
        # a page may name but that decode no text: as good as no label.
        b" ".decode(name, errors="replace")
    except (LookupError, UnicodeError):
        # Python's "undefined" codec exists but refuses to decode anything.
        return None
    return _WIDER.get(name, name)


def _bom_codec(body: bytes) -> str | None:
    if body.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if body.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def decode(
    body: bytes,
    content_type: str,
    *,
    html: bool,
    url: str = "",
    guess: Callable[[], str] | None = None,
) -> str:
    """BOM, then the header's charset, then ``<meta charset>`` (or, for
    anything but HTML, the XML declaration's encoding), then UTF-8, then
    the encoding the bytes read best in, as browsers guess
    (checks.content.guess): windows-1252 unless a Japanese, Chinese,
    Korean, Cyrillic, Greek, Hebrew, Arabic or Thai one plainly reads
    better, or a Central European, Turkish or Baltic one plainly reads as
    that language's letters, with the address's country domain (`url`:
    .pl, .tr, .lt) settling what the letters cannot. `guess` is the
    response's own guess (FetchResult.guessed_encoding), made once however
    often its body is decoded. A label the bytes plainly contradict gives
    way to the next: servers send ``charset=utf-8`` for whatever their
    pages are written in, and templates keep an old label after the site
    moved to UTF-8, or the reverse."""
    codec = _bom_codec(body)
    if codec is not None:
        return body.decode(codec, errors="replace")
    match = _CHARSET_PARAM.search(content_type)
    in_header = _codec(match.group(1)) if match else None
    text = _read_as(body, in_header)
    if text is not None:
        return text
    if html:
        match = _META_CHARSET.search(body[:4096])
    else:
        match = _XML_ENCODING.match(body[:1024])
    label = match.group(1).decode("ascii", "replace") if match else None
    in_document = _in_document(label)
    text = _read_as(body, in_document)
    if text is None and "utf-8" not in (in_header, in_document):
        text = _read_as_utf8(body)  # not asked yet
    if text is None:
        guessed = guess() if guess is not None else guessed_encoding(body, url)
        codec = _codec(guessed) or "cp1252"
        text = body.decode(codec, errors="replace")
    return text


def _in_document(label: str | None) -> str | None:
    codec = _codec(label)
    # A page that was transcoded to UTF-16 by a proxy still says utf-16 in
    # its meta tag, but without a BOM the bytes are ASCII-compatible.
    if codec and codec.startswith("utf-16"):
        return "utf-8"
    return codec


def _read_as(body: bytes, codec: str | None) -> str | None:
    """The body read as a declared codec, unless the bytes plainly
    contradict it: UTF-8 whose bytes are not (None: ask the next source),
    or a legacy encoding whose non-ASCII bytes are all valid UTF-8, which no
    legacy text is by chance. Each body is decoded once where it can be:
    the strict UTF-8 reading that proves the label is the text returned."""
    if codec is None:
        return None
    if codec == "utf-8":
        return _read_as_utf8(body)
    if not codec.startswith("utf-16") and not body.isascii():
        with contextlib.suppress(UnicodeDecodeError):
            return body.decode("utf-8")
    return body.decode(codec, errors="replace")


# Every ASCII byte made a space, so that splitting a body on whitespace gives
# its runs of non-ASCII bytes (a word's letters, a sentence of Japanese).
_ASCII_TO_SPACE = bytes.maketrans(bytes(range(128)), b" " * 128)
# How many runs of non-ASCII bytes that are not UTF-8 a page may hold for each
# one that is, and still be read as UTF-8.
_STRAY_RUNS_PER_UTF8_RUN = 8


def _read_as_utf8(body: bytes) -> str | None:
    """The body read as UTF-8, when its bytes are: all of them, or all but
    some stray bytes among runs that are whole UTF-8 characters. Text in a
    legacy encoding read as UTF-8 almost never holds a run of non-ASCII bytes
    that is UTF-8 throughout, and would turn each letter into the same
    U+FFFD, so "café" -> "cafè" would never be seen as a change. The margin
    is wide, so a UTF-8 page with a few pasted Latin-1 bytes is not read one
    way on one check and the other way on the next."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    runs = body.translate(_ASCII_TO_SPACE).split()
    read = b" ".join(runs).decode("utf-8", errors="replace").split(" ")
    utf8_runs = sum(1 for run in read if "\ufffd" not in run)
    stray_runs = len(runs) - utf8_runs
    if utf8_runs == 0 or stray_runs > utf8_runs * _STRAY_RUNS_PER_UTF8_RUN:
        return None
    return body.decode("utf-8", errors="replace")


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
