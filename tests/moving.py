"""Fixture files for the import tests (tests/fixtures/moving/), and a
changedetection.io backup zipped from its folder the way its Backups page
packs one. Snapshots named *.txt.br are kept as plain text in the folder so
they can be read and edited; they are Brotli-compressed when zipped."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import brotli

FIXTURES = Path(__file__).parent / "fixtures" / "moving"
BACKUP = FIXTURES / "changedetection-backup"
PRICING_UUID = "3f1c2a4e-0b6d-4c1a-9e2f-1a2b3c4d5e6f"
WIDGET_UUID = "7d0e9b1c-5a4f-4e3b-8c2d-6f5e4d3c2b1a"
FTP_UUID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
METADATA_UUID = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def zip_files(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def backup_files(folder: Path = BACKUP) -> dict[str, bytes]:
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name.endswith(".br"):
                data = brotli.compress(data)
            files[path.relative_to(folder).as_posix()] = data
    return files


def backup_zip() -> bytes:
    return zip_files(backup_files())
