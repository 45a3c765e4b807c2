"""Which legacy encoding a page that names none is written in.

Browsers guess too: from the bytes (Firefox's chardetng, Chromium's
compact_enc_det), with the page's top-level domain as a hint, and fall back
to windows-1252. A guess reads a bounded sample of the page's text, and the
same bytes at the same address always give the same guess, so an unchanged
page never reads as a change.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from urllib.parse import urlsplit

import charset_normalizer
from charset_normalizer import CharsetMatch

# Guessing reads the runs of text that hold non-ASCII bytes, found in the
# GUESS_SCAN_BYTES from the run of the first such byte on and kept to GUESS_TEXT_BYTES:
# markup and scripts (however long) are ASCII and say nothing about the
# encoding, and a page's encoding is told as well from its first pages of
# text as from all of them.
GUESS_SCAN_BYTES = 256 * 1024
GUESS_TEXT_BYTES = 16 * 1024
# Split at "<", ">" and line ends: no multi-byte character of the encodings
# guessed holds one of these bytes, so each run is whole characters.
_RUN_ENDS = re.compile(rb"[<>\n]")
_NON_ASCII = re.compile(rb"[\x80-\xff]")
# The encodings written in other scripts than Latin, told apart by their
# letters alone; earlier ones win a tie.
_OTHER_GUESSES = (
    "cp932",  # Shift_JIS as browsers read it
    "euc_jp",
    "gb18030",  # GB2312 and GBK as browsers read them
    "big5",
    "cp949",  # EUC-KR as browsers read it
    "cp1251",
    "koi8_r",
    "cp1253",  # Greek
    "iso8859_7",
    "cp1255",  # Hebrew
    "cp1256",  # Arabic
    "cp874",  # Thai, TIS-620 as browsers read it
)
# Encodings of Latin letters: the same bytes read as accented letters in
# each, so one is chosen over windows-1252, the fallback browsers share, only
# when windows-1252 plainly reads as letters no one language has together
# (Czech's "řeč" as "øeè") or as symbols inside words (Polish "Urząd" as
# "Urz¹d"): see _plainly_not_windows_1252.
# Earlier ones win a tie.
_LATIN_GUESSES = ("cp1252", "cp1250", "iso8859_2", "cp1254", "cp1257")
# The letters beyond ASCII each language written in Latin letters uses
# (lower case), to tell which reading is some language's: Western ones
# (windows-1252's), then Central European, Turkish and Baltic ones.
_WESTERN_ALPHABETS = (
    "àâæçéèêëîïôœùûüÿ",  # French
    "äöüß",  # German
    "áéíñóúü",  # Spanish
    "áàâãçéêíóôõú",  # Portuguese
    "àèéìíîòóùú",  # Italian
    "àâäçéèêëìîïòôöœùûüÿß",  # French, German and Italian on one page (Swiss)
    "àçèéíïòóúü",  # Catalan
    "áéëíïóöúü",  # Dutch
    "æøåé",  # Danish, Norwegian
    "åäöé",  # Swedish
    "äöåšž",  # Finnish
    "áðéíóúýþæö",  # Icelandic
    "äöõüšž",  # Estonian
)
_EASTERN_ALPHABETS = (
    "áčďéěíňóřšťúůýž",  # Czech
    "áäčďéíĺľňóôŕšťúýž",  # Slovak
    "ąćęłńóśźż",  # Polish
    "áéíóöőúüű",  # Hungarian
    "čćđšž",  # Croatian, Slovene, Bosnian, Serbian
    "ăâîșşțţ",  # Romanian
    "çğıöşüâîû",  # Turkish
    "ąčęėįšųūž",  # Lithuanian
    "āčēģīķļņšūž",  # Latvian
)
_ALPHABETS = _WESTERN_ALPHABETS + _EASTERN_ALPHABETS
# How much better than windows-1252 another Latin reading must be to be
# taken: by at least this many marks of a misreading, and this share of the
# page's characters beyond ASCII.
MARGIN_MARKS = 2
MARGIN_SHARE = 0.1
# Letters of the Central European, Turkish and Baltic alphabets that no
# Western one above has.
_EASTERN_ONLY = frozenset("".join(_EASTERN_ALPHABETS)) - frozenset(
    "".join(_WESTERN_ALPHABETS)
)
# What a page's address says its unlabelled pages are likely written in, as
# browsers take their default from the reader's locale (the HTML Standard's
# table) and from the page's top-level domain: the hint settles a tie the
# letters cannot ("hétfőtől" and "hétfõtõl" are both Hungarian letters).
_TLD_HINTS = {
    "cz": "cp1250",
    "sk": "cp1250",
    "pl": "cp1250",
    "hu": "cp1250",
    "si": "cp1250",
    "hr": "cp1250",
    "ro": "cp1250",
    "tr": "cp1254",
    "lt": "cp1257",
    "lv": "cp1257",
    "ee": "cp1257",
}
# A character that may be a symbol (beyond ASCII, outside the letters of the
# scripts guessed) between two letters, and one next to a letter (letters
# as regular expressions know them: word characters but digits);
# _is_symbol has the last word on each.
_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]")
_MAYBE_SYMBOL = (
    r"[^\x00-\x7f\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
    r"\u0370-\u04ff\u05d0-\u05ea\u0620-\u064a\u0e01-\u0e2e]"
)
_INSIDE_A_WORD = re.compile(rf"(?<=[^\W\d_]){_MAYBE_SYMBOL}(?=[^\W\d_])")
_BY_A_WORD = re.compile(rf"(?<=[^\W\d_]){_MAYBE_SYMBOL}|{_MAYBE_SYMBOL}(?=[^\W\d_])")
_CONTROLS = re.compile(r"[\x80-\x9f]")
# Punctuation that may stand inside or before a word: dashes, quotes
# (l’avance), brackets and Catalan's middle dot (col·lecció).
_JOINING = {"Pd", "Pi", "Pf", "Pc", "Ps", "Pe"}


def guessed_encoding(body: bytes, url: str = "") -> str:
    """The encoding (a Python codec name) a body that is not UTF-8 and has
    no label it agrees with reads best in: one written in another script
    when windows-1252 reads plainly worse, else a Latin one."""
    matches = charset_normalizer.from_bytes(
        guess_sample(body),
        cp_isolation=[*_LATIN_GUESSES, *_OTHER_GUESSES],
        preemptive_behaviour=False,
        enable_fallback=False,
    )
    latin = [match for match in matches if match.encoding in _LATIN_GUESSES]
    other = [match for match in matches if match.encoding in _OTHER_GUESSES]
    if other:
        least = min(match.chaos for match in other)
        if not any(match.chaos <= least for match in latin):
            return _other_encoding([m for m in other if m.chaos == least])
    return _latin_encoding(latin, _tld_hint(url))


def guess_sample(body: bytes) -> bytes:
    """The runs of a body's text that hold non-ASCII bytes, from the first
    such run as far as GUESS_SCAN_BYTES, kept to GUESS_TEXT_BYTES: all a
    guess reads."""
    first = _NON_ASCII.search(body)
    end = first.start() if first else 0
    start = max(body.rfind(b"<", 0, end), body.rfind(b"\n", 0, end)) + 1
    scanned = body[start : start + GUESS_SCAN_BYTES]
    runs = [run for run in _RUN_ENDS.split(scanned) if not run.isascii()]
    text = b"\n".join(runs)
    if len(text) > GUESS_TEXT_BYTES:
        # Cut after a whole run, unless the first is longer than the limit.
        end = text.rfind(b"\n", 0, GUESS_TEXT_BYTES)
        text = text[: end if end > 0 else GUESS_TEXT_BYTES]
    return text


def _other_encoding(readings: list[CharsetMatch]) -> str:
    """Of readings in other scripts that are as orderly, the one with the
    fewest symbols stuck to a word (ISO-8859-7's "Ά" is a "¶" in
    windows-1253), then the one that reads more like a language."""
    return min(
        readings,
        key=lambda match: (
            _symbols_by_words(str(match)),
            -match.coherence,
            _OTHER_GUESSES.index(match.encoding),
        ),
    ).encoding


def _latin_encoding(readings: list[CharsetMatch], hint: str | None) -> str:
    """Of Latin readings (each standing for every encoding that reads the
    same), the one with the fewest marks of a misreading; on a tie the
    address's hint, else windows-1252, else the earliest guess. One other
    than windows-1252 is taken only when it is plainly better (see
    _plainly_not_windows_1252), so a page of Western names from several
    languages, or an edit that adds a line, never moves a page away from the
    reading every browser falls back to. How orderly charset-normalizer
    finds each reading is left aside: between Latin readings it turns on a
    "²" or a "™" as much as on a letter."""
    if not readings:
        return "cp1252"
    marks = {id(match): _misread_marks(str(match)) for match in readings}
    fewest = min(marks.values())
    best = [match for match in readings if marks[id(match)] == fewest]
    encodings = {encoding for match in best for encoding in _encodings_of(match)}
    for choice in (hint, "cp1252"):
        if choice in encodings:
            return choice
    choice = next(encoding for encoding in _LATIN_GUESSES if encoding in encodings)
    western = next((m for m in readings if "cp1252" in _encodings_of(m)), None)
    if western is not None and not _plainly_not_windows_1252(
        str(western),
        marks[id(western)],
        str(next(m for m in best if choice in _encodings_of(m))),
        fewest,
    ):
        return "cp1252"
    return choice


def _plainly_not_windows_1252(
    western: str, western_marks: int, other: str, other_marks: int
) -> bool:
    """Whether another reading of the same bytes is plainly better than the
    windows-1252 one: by MARGIN_MARKS marks or more, and by MARGIN_SHARE of
    the characters beyond ASCII, and with evidence no Western text gives:
    symbols inside words in windows-1252 ("Urz¹d"), or, in the other
    reading, letters only Central European, Turkish or Baltic languages
    write ("ł", "ő", "ř", "ğ", "ė"). Western text read in windows-1250 is
    often all Czech letters ("crème, Ørsted, più" as "crčme, Řsted, pců"),
    one mark better than a mix of Western languages."""
    margin = western_marks - other_marks
    beyond_ascii = len(_BEYOND_ASCII.findall(western))
    if margin < MARGIN_MARKS or margin < MARGIN_SHARE * beyond_ascii:
        return False
    symbols = sum(
        1 for found in _INSIDE_A_WORD.finditer(western) if _is_symbol(found.group())
    )
    return symbols > 0 or any(char in _EASTERN_ONLY for char in other.lower())


def _encodings_of(match: CharsetMatch) -> set[str]:
    return set(match.could_be_from_charset) & set(_LATIN_GUESSES)


def _misread_marks(text: str) -> int:
    """How many characters of a reading mark it as the wrong one: letters
    beyond ASCII (lower or upper case: "º" and "ª" are signs, though Unicode
    counts them as letters) that the language using most of them lacks, symbols
    between two letters, as superscripts, fractions and signs are when a
    Central European page is read in the wrong encoding ("d³ugo", "mo¿e"),
    and control characters, as windows-1250's "š" is in ISO-8859-2."""
    counts = {
        char: count
        for char, count in Counter(_BEYOND_ASCII.findall(text.lower())).items()
        if unicodedata.category(char) == "Ll"
    }
    covered = max(
        sum(counts.get(char, 0) for char in alphabet) for alphabet in _ALPHABETS
    )
    symbols = sum(
        1 for found in _INSIDE_A_WORD.finditer(text) if _is_symbol(found.group())
    )
    return sum(counts.values()) - covered + symbols + len(_CONTROLS.findall(text))


def _symbols_by_words(text: str) -> int:
    """How many symbols touch a letter (either side)."""
    return sum(1 for found in _BY_A_WORD.finditer(text) if _is_symbol(found.group()))


def _is_symbol(char: str) -> bool:
    category = unicodedata.category(char)
    return (
        not char.isascii()
        and char != "·"
        and (category[0] in "PS" or category == "No")
        and category not in _JOINING
    )


def _tld_hint(url: str) -> str | None:
    host = urlsplit(url).hostname or ""
    return _TLD_HINTS.get(host.rpartition(".")[2])
