"""Text read from pictures of pages (scanned PDFs) with OCR: each page
rendered with PDFium, then read by Debian's tesseract run as a subprocess.

Bounded, since the PDF is a stranger's: at most OCR_MAX_PAGES pages of a PDF,
each rendered at no more than OCR_MAX_PIXELS pixels, the engine killed after
OCR_PAGE_SECONDS on a page. One page is read at a time in a worker process
(the parallelism comes from running more workers), with one thread of
tesseract's own, so the same bytes always read as the same text.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pypdfium2
    from PIL import Image

# Scanners and tesseract's models work at about 300 dots per inch.
DPI = 300
# Characters of the engine's complaint kept in a page's error.
STDERR_CHARS = 300
INSTALL = (
    "install tesseract-ocr (and tesseract-ocr-<language> packs) or set OCR_EXECUTABLE"
)

# PDFium is not thread-safe, and a second page read at once would only take
# CPU from the other workers: one page at a time in a process.
_one_at_a_time = threading.Lock()


class OcrError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Engine:
    executable: str
    languages: str
    max_pages: int
    max_pixels: int
    page_seconds: int


def _configured() -> str:
    from django.conf import settings  # lazily: checks.content is Django-free

    return str(getattr(settings, "OCR_EXECUTABLE", "") or "").strip()


def find_executable(configured: str) -> str | None:
    """The engine's program: OCR_EXECUTABLE (a path or a name on PATH), else
    `tesseract` on PATH; None when there is none."""
    candidate = configured or "tesseract"
    path = Path(candidate)
    if path.is_absolute():
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(candidate)


def engine() -> Engine | None:
    """The OCR engine as configured, or None when it is not installed."""
    from django.conf import settings

    executable = find_executable(_configured())
    if executable is None:
        return None
    return Engine(
        executable=executable,
        languages=settings.OCR_LANGUAGES,
        max_pages=settings.OCR_MAX_PAGES,
        max_pixels=settings.OCR_MAX_PIXELS,
        page_seconds=settings.OCR_PAGE_SECONDS,
    )


def available() -> bool:
    return find_executable(_configured()) is not None


def unavailable_reason() -> str:
    """Why there is no OCR, and what turns it on, for a page's error."""
    configured = _configured()
    if configured:
        return f"OCR_EXECUTABLE ({configured}) was not found: {INSTALL}"
    return f"no OCR engine is installed: {INSTALL}"


def read_pages(body: bytes, numbers: Sequence[int], ocr: Engine) -> dict[int, str]:
    """The text of the pages `numbers` (0-based) of the PDF `body`, read with
    OCR. Raises OcrError when a page cannot be rendered or read."""
    import pypdfium2  # lazily: only workers that meet a scanned PDF load PDFium

    with _one_at_a_time:
        try:
            document = pypdfium2.PdfDocument(body)
        except pypdfium2.PdfiumError as exc:
            raise OcrError(f"the PDF could not be opened for OCR ({exc})") from exc
        try:
            return {n: _read(*_image(document, n, ocr), n, ocr) for n in numbers}
        finally:
            document.close()


def _image(
    document: pypdfium2.PdfDocument, number: int, ocr: Engine
) -> tuple[bytes, int]:
    """Page `number` as a greyscale PGM image, scaled down to fit max_pixels,
    and its dots per inch."""
    import pypdfium2

    try:
        page = document[number]
    except pypdfium2.PdfiumError as exc:
        raise OcrError(f"page {number + 1} could not be opened ({exc})") from exc
    try:
        width, height = page.get_size()
        area = max(width * height, 1.0)
        scale = min(DPI / 72, math.sqrt(ocr.max_pixels / area))
        # Rounding each side up could pass the cap by a row: shave it.
        while math.ceil(width * scale) * math.ceil(height * scale) > ocr.max_pixels:
            scale *= 0.999
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            return _pgm(bitmap.to_pil()), max(1, round(scale * 72))
        finally:
            bitmap.close()
    except pypdfium2.PdfiumError as exc:
        raise OcrError(f"page {number + 1} could not be rendered ({exc})") from exc
    finally:
        page.close()


def _pgm(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.convert("L").save(buffer, "PPM")
    return buffer.getvalue()


def _read(image: bytes, dpi: int, number: int, ocr: Engine) -> str:
    command = [ocr.executable, "stdin", "stdout", "-l", ocr.languages]
    command += ["--dpi", str(dpi)]
    # One thread: tesseract's own threads would compete with the other
    # workers' and gain nothing on a page this size.
    env = os.environ | {"OMP_THREAD_LIMIT": "1"}
    # Its own session, so a time-out kills whatever it started too.
    process = subprocess.Popen(  # noqa: S603 (the administrator's own program)
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(image, timeout=ocr.page_seconds)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise OcrError(
            f"reading page {number + 1} with OCR took longer than "
            f"{ocr.page_seconds} seconds (OCR_PAGE_SECONDS), so it was stopped"
        ) from None
    except BaseException:
        _kill(process)
        raise
    if process.returncode != 0:
        said = err.decode("utf-8", "replace").strip()[-STDERR_CHARS:]
        raise OcrError(
            f"the OCR engine failed on page {number + 1} "
            f"(exit status {process.returncode}): {said or 'it said nothing'}"
        )
    return tidy(out.decode("utf-8", "replace"))


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def tidy(text: str) -> str:
    """The engine's text as page text: no form feeds, no trailing spaces, at
    most one blank line in a row."""
    lines = [line.rstrip() for line in text.replace("\f", "\n").splitlines()]
    kept: list[str] = []
    for line in lines:
        if line or (kept and kept[-1]):
            kept.append(line)
    return "\n".join(kept).strip()
