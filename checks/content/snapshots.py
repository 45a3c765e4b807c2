"""The stored form of a page's source: content-addressed and compressed.

Snapshots are compressed once and read rarely (diffs, the dashboard): speed
over ratio. Zstandard at level 1 packs a page in about half zlib's time (and a
little smaller); rows written with zlib before stay readable (unpack tells the
two apart by their first bytes).
"""

from __future__ import annotations

import hashlib
import threading
import zlib

import zstandard

from checks.content.source import SOURCE_MARKDOWN

# (content hash, compressed data, size, source format) of a Snapshot row.
Pack = tuple[str, bytes, int, str]

_ZSTD_LEVEL = 1
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _digest(raw: bytes, source_format: str) -> str:
    digest = hashlib.sha256()
    if source_format != SOURCE_MARKDOWN:
        digest.update(source_format.encode() + b"\0")
    digest.update(raw)
    return digest.hexdigest()


def snapshot_hash(text: str, source_format: str = SOURCE_MARKDOWN) -> str:
    """A snapshot's content hash. An HTML source hashes with its format, so it
    can never share a row with Markdown text that happens to be the same."""
    return _digest(text.encode(), source_format)


_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    # One per thread: a compressor is reusable but not thread-safe.
    compressor = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    return compressor


def pack_snapshot(
    text: str, source_format: str = SOURCE_MARKDOWN, *, unless: str | None = None
) -> Pack:
    """(content hash, compressed bytes, size, format) of a Snapshot row for
    `text`; the bytes are left empty when the hash is `unless` (that row
    exists already)."""
    raw = text.encode()
    digest = _digest(raw, source_format)
    if digest == unless:
        return digest, b"", len(raw), source_format
    return digest, _compressor().compress(raw), len(raw), source_format


def pack_bytes(raw: bytes) -> bytes:
    return _compressor().compress(raw)


def unpack_bytes(data: bytes) -> bytes:
    """Bytes packed by `pack_bytes`; raises ValueError for damaged data."""
    try:
        return zstandard.ZstdDecompressor().decompress(data)
    except zstandard.ZstdError as exc:
        raise ValueError(f"damaged data: {exc}") from exc


def unpack(data: bytes) -> str:
    """The text of a snapshot's compressed data (Zstandard, or older zlib).
    Raises ValueError for damaged data."""
    try:
        if data[:4] == _ZSTD_MAGIC:
            return zstandard.ZstdDecompressor().decompress(data).decode()
        return zlib.decompress(data).decode()
    except (zlib.error, zstandard.ZstdError) as exc:
        raise ValueError(f"damaged snapshot data: {exc}") from exc


# A diff packed against the raw text of the two snapshots it compares starts
# with this byte (a Zstandard frame starts with 0x28): nearly every line of a
# diff is a line of one of them, so a rewritten page's diff packs into a few
# KB where on its own it takes as much as both pages again.
_AGAINST = b"\x01"
# A diff's lines are long matches in the reference, but a page of few distinct
# words also holds short ones nearby, which the fastest levels settle for:
# from about this level on the matcher looks further and finds the long ones.
_AGAINST_LEVEL = 12
# Decoders accept windows up to 2**27 by default; bigger pages pack less well.
_MAX_WINDOW_LOG = 27


def diff_reference(previous: str, current: str) -> bytes:
    """What a page's diff is packed against: the raw stored text of its
    previous snapshot ("" when there is none or it cannot be read) and of its
    current one."""
    return previous.encode() + b"\0" + current.encode()


def pack_against(raw: bytes, reference: bytes) -> bytes:
    """`raw` compressed with `reference` as its dictionary. A checksum rides
    along, so data read against another reference fails instead of reading
    as garbage."""
    # The window must reach back over the whole reference: a level's own
    # window is sized to the data alone and would miss most of it.
    window = min(max(len(reference) + len(raw), 1 << 10).bit_length(), _MAX_WINDOW_LOG)
    params = zstandard.ZstdCompressionParameters.from_level(
        _AGAINST_LEVEL, window_log=window, write_checksum=True
    )
    compressor = zstandard.ZstdCompressor(
        compression_params=params, dict_data=_raw_dict(reference)
    )
    return _AGAINST + compressor.compress(raw)


def packed_against(data: bytes) -> bool:
    return data[:1] == _AGAINST


def unpack_against(data: bytes, reference: bytes) -> bytes:
    """Bytes packed by `pack_against`; raises ValueError for damaged data or
    another reference than theirs."""
    try:
        decompressor = zstandard.ZstdDecompressor(dict_data=_raw_dict(reference))
        return decompressor.decompress(data[1:])
    except zstandard.ZstdError as exc:
        raise ValueError(f"damaged data or another reference: {exc}") from exc


def _raw_dict(reference: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(
        reference, dict_type=zstandard.DICT_TYPE_RAWCONTENT
    )
