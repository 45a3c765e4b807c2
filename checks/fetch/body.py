"""Response bodies decoded (gzip, deflate; br and zstd when sent unasked)
under a cap on the decoded size.

We decode bodies ourselves, not httpx, so a 1 KB gzip bomb is stopped at the
cap instead of becoming a gigabyte in memory.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator

import brotli
import httpx
import zstandard
from isal import isal_zlib

from checks.content.sniff import SNIFF_BYTES
from checks.errors import ErrorKind
from checks.fetch.errors import FetchError, human_size

# We only advertise the encodings we can decode with a bounded output size
# (and decode br and zstd too, when a server sends them unasked).
ACCEPT_ENCODING = "gzip, deflate"
_DECODE_PIECE = 64 * 1024
# The largest zstd window HTTP asks decoders to support (RFC 9659): a frame
# asking for more memory is refused rather than given up to 2 GB.
_ZSTD_WINDOW = 8 * 1024 * 1024


# ISA-L's inflate: the zlib interface, faster on gzip pages.
_INFLATE_ERRORS = (isal_zlib.error, zlib.error)


class _ZlibStage:
    """Decompresses in bounded pieces so a 1 KB bomb never becomes 1 GB in RAM."""

    def __init__(self, coding: str):
        self._coding = coding
        self._raw_deflate = False
        self._started = False
        self._z = isal_zlib.decompressobj(self._wbits())

    def _wbits(self) -> int:
        if self._coding == "deflate":
            return -zlib.MAX_WBITS if self._raw_deflate else zlib.MAX_WBITS
        return 16 + zlib.MAX_WBITS

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            yield from self._drain(data)
        except _INFLATE_ERRORS as exc:
            if self._coding != "deflate" or self._started or self._raw_deflate:
                detail = f"a {self._coding} body that could not be decoded"
                raise FetchError(ErrorKind.PROTOCOL, detail=detail) from exc
            # Many servers send raw deflate without the zlib header.
            self._raw_deflate = True
            self._z = isal_zlib.decompressobj(self._wbits())
            yield from self.feed(data)

    def _drain(self, data: bytes) -> Iterator[bytes]:
        while True:
            out = self._z.decompress(data, _DECODE_PIECE)
            self._started = True  # past the header: no more format guessing
            data = self._z.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < _DECODE_PIECE:
                return

    def flush(self) -> Iterator[bytes]:
        with contextlib.suppress(*_INFLATE_ERRORS):  # truncated: keep what decoded
            tail = self._z.flush()
            if tail:
                yield tail


class _BrotliStage:
    """Brotli, which we never ask for but servers holding pre-compressed
    files send anyway, in pieces of at most _DECODE_PIECE: the decoder's
    output limit stops a bomb as zlib's max_length does."""

    def __init__(self) -> None:
        self._b = brotli.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            out = self._b.process(data, output_buffer_limit=_DECODE_PIECE)
            if out:
                yield out
                yield from self._drain()
        except brotli.error as exc:
            detail = "a br body that could not be decoded"
            raise FetchError(ErrorKind.PROTOCOL, detail=detail) from exc

    def _drain(self) -> Iterator[bytes]:
        # The decoder takes in all it is given but hands out at most a piece
        # per call, and says it can accept more data while decoded output is
        # still waiting: only an empty answer means the input is used up.
        while not self._b.is_finished():
            out = self._b.process(b"", output_buffer_limit=_DECODE_PIECE)
            if not out:
                return
            yield out

    def flush(self) -> Iterator[bytes]:
        # Truncated: keep what decoded, as with gzip.
        with contextlib.suppress(brotli.error):
            yield from self._drain()


class _Enough(Exception):
    """Raised into the zstd decoder to stop it: the body is past its cap."""


class _ZstdSink:
    """Where the zstd decoder writes what it decodes, in pieces of at most
    _DECODE_PIECE. The decoder has no output limit per call, so the sink
    stops it once it holds more than the body may: a bomb is cut there,
    not read whole."""

    def __init__(self, room: int) -> None:
        self.pieces: list[bytes] = []
        self._room = room

    def write(self, piece: bytes) -> int:
        self.pieces.append(bytes(piece))
        self._room -= len(piece)
        if self._room < 0:
            raise _Enough
        return len(piece)


class _ZstdStage:
    """Zstandard, which we never ask for either but servers holding
    pre-compressed files send anyway. Decoded bytes past `limit` are never
    kept: the reader refuses or cuts the body there, and no stage after this
    one shrinks them again."""

    def __init__(self, limit: int) -> None:
        # One byte past the cap is what tells the reader the body is too big.
        self._sink = _ZstdSink(limit + 1)
        self._z = zstandard.ZstdDecompressor(max_window_size=_ZSTD_WINDOW)
        self._writer = self._z.stream_writer(self._sink, write_size=_DECODE_PIECE)
        self._full = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._full:
            return
        try:
            self._writer.write(data)
        except _Enough:
            self._full = True
        except zstandard.ZstdError as exc:
            detail = "a zstd body that could not be decoded"
            raise FetchError(ErrorKind.PROTOCOL, detail=detail) from exc
        pieces, self._sink.pieces = self._sink.pieces, []
        yield from pieces

    def flush(self) -> Iterator[bytes]:
        # Truncated: what decoded was handed out as it came, as with gzip.
        return iter(())


class BodyReader:
    """Turns raw (still content-encoded) chunks into the decoded body, or raises
    `too_large` the moment the decoded size passes the cap. With `truncate`,
    the body is cut at the cap instead and `full` says to stop reading. With
    `is_a_file`, the body's first SNIFF_BYTES are shown to it, and when it
    says they are a file that is not a page, `full` says to stop there (a
    small gzip body can decode to megabytes, so this is asked as it decodes)."""

    def __init__(
        self,
        content_encoding: str,
        limit: int,
        truncate: bool = False,
        is_a_file: Callable[[bytes], bool] | None = None,
    ):
        self._stages = _stages_for(content_encoding, limit)
        self._limit = limit
        self._truncate = truncate
        self._is_a_file = is_a_file
        self._parts: list[bytes] = []
        self._size = 0
        self.full = False

    def feed(self, raw: bytes) -> None:
        for piece in self._through(raw, 0):
            self._keep(piece)
            if self._is_a_file is not None and self._size >= SNIFF_BYTES:
                is_a_file, self._is_a_file = self._is_a_file, None
                # A cut at the cap (_keep) has said to stop already.
                self.full = self.full or is_a_file(b"".join(self._parts))
            if self.full:
                return

    def finish(self) -> bytes:
        if self.full:
            return b"".join(self._parts)
        for index, stage in enumerate(self._stages):
            for piece in stage.flush():
                for decoded in self._through(piece, index + 1):
                    self._keep(decoded)
        return b"".join(self._parts)

    def _through(self, data: bytes, start: int) -> Iterator[bytes]:
        if start == len(self._stages):
            yield data
            return
        for piece in self._stages[start].feed(data):
            yield from self._through(piece, start + 1)

    def _keep(self, piece: bytes) -> None:
        if self._truncate and self._size + len(piece) >= self._limit:
            self._parts.append(piece[: self._limit - self._size])
            self._size = self._limit
            self.full = True
            return
        self._size += len(piece)
        if self._size > self._limit:
            raise FetchError(ErrorKind.TOO_LARGE, detail=human_size(self._limit))
        self._parts.append(piece)


_Stage = _ZlibStage | _BrotliStage | _ZstdStage


def _stages_for(content_encoding: str, limit: int) -> list[_Stage]:
    # Encodings are listed in the order applied, so they are undone in reverse.
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    stages: list[_Stage] = []
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip", "deflate"):
            stages.append(_ZlibStage("deflate" if coding == "deflate" else "gzip"))
        elif coding == "br":
            stages.append(_BrotliStage())
        elif coding == "zstd":
            stages.append(_ZstdStage(limit))
        elif coding in ("compress", "x-compress"):
            detail = f"an unsupported encoding ({coding})"
            raise FetchError(ErrorKind.PROTOCOL, detail=detail)
        # Anything else ("identity", or junk like "utf-8") is passed through, as
        # browsers and httpx do.
    return stages


def check_declared_length(headers: httpx.Headers, limit: int) -> None:
    # Refuse before reading when an uncompressed body says it is too big.
    if "content-encoding" in headers:
        return
    with contextlib.suppress(KeyError, ValueError):
        if int(headers["content-length"]) > limit:
            raise FetchError(ErrorKind.TOO_LARGE, detail=human_size(limit))
