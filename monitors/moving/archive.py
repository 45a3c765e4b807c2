"""Reading an uploaded zip without trusting it: no entry is written to disk,
names that climb out of the archive (zip-slip) refuse the whole file, and the
bytes and entries read are capped by what is actually inflated, not by what
the archive declares (a zip bomb declares small sizes)."""

from __future__ import annotations

import io
import posixpath
import zipfile

import brotli

from monitors.moving.base import ImportRefused

MAX_ENTRIES = 20_000
MAX_ENTRY_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024
_CHUNK = 64 * 1024


class DamagedEntry(ImportRefused):
    """One file of the archive cannot be unpacked (the rest may be fine);
    its caps passed are an ImportRefused of the whole archive instead."""


class SafeZip:
    def __init__(self, data: bytes) -> None:
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError):
            raise ImportRefused(
                "The file is not a zip archive, or it is damaged (a download cut "
                "short?): download the backup again."
            ) from None
        infos = self._zip.infolist()
        if len(infos) > MAX_ENTRIES:
            raise ImportRefused(
                f"The archive holds {len(infos)} files; at most {MAX_ENTRIES} are read."
            )
        self._infos: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = info.filename.replace("\\", "/")
            clean = posixpath.normpath(name)
            if name.startswith("/") or clean == ".." or clean.startswith("../"):
                raise ImportRefused(
                    f"The archive holds a path that leads outside it ({name[:100]}):"
                    " it is not a backup this importer reads."
                )
            if not info.is_dir():
                self._infos[clean] = info
        self._read_total = 0

    def names(self) -> list[str]:
        return list(self._infos)

    def find(self, basename: str) -> str | None:
        """The shallowest entry with this file name (a backup may sit in a
        folder of its own)."""
        found = [n for n in self._infos if posixpath.basename(n) == basename]
        return min(found, key=lambda n: n.count("/")) if found else None

    def read(self, name: str) -> bytes:
        info = self._infos[name]
        out = bytearray()
        try:
            with self._zip.open(info) as handle:
                while chunk := handle.read(_CHUNK):
                    out += chunk
                    self._count(name, len(out), len(chunk))
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
            raise DamagedEntry(
                f"{name[:100]} in the archive is damaged ({exc})."
            ) from None
        if name.endswith(".br"):
            return self._unbrotli(name, bytes(out))
        return bytes(out)

    def _count(self, name: str, entry: int, added: int) -> None:
        self._read_total += added
        if entry > MAX_ENTRY_BYTES:
            raise ImportRefused(
                f"{name[:100]} unpacks to more than {MAX_ENTRY_BYTES // 2**20} MB: "
                "the archive is not read."
            )
        if self._read_total > MAX_TOTAL_BYTES:
            raise ImportRefused(
                f"The archive unpacks to more than {MAX_TOTAL_BYTES // 2**20} MB: "
                "it is not read."
            )

    def _unbrotli(self, name: str, data: bytes) -> bytes:
        decompressor = brotli.Decompressor()
        out = bytearray()
        try:
            out += decompressor.process(data, output_buffer_limit=_CHUNK)
            self._count(name, len(out), len(out))
            while not decompressor.is_finished():
                if decompressor.can_accept_more_data():
                    break  # the input ended before the stream did
                chunk = decompressor.process(b"", output_buffer_limit=_CHUNK)
                out += chunk
                self._count(name, len(out), len(chunk))
        except brotli.error:
            raise DamagedEntry(f"{name[:100]} in the archive is damaged.") from None
        return bytes(out)
