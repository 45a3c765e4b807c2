"""Text read from pictures of pages (scanned PDFs) with OCR: each page
rendered with PDFium, then read by Debian's tesseract, both in a child process
(checks/content/ocr_job.py) so that a stranger's PDF cannot take the worker's
memory or outlive its time limit.

Bounded, since the PDF is a stranger's: at most OCR_MAX_PAGES pages of a PDF,
each rendered at no more than OCR_MAX_PIXELS pixels, the engine killed after
OCR_PAGE_SECONDS on a page; the child may use OCR_MEMORY_MB of memory and is
killed, with the engine, after OCR_PDF_SECONDS for the whole PDF. It gets no
more of the worker's environment than PATH, the locale and TESSDATA_PREFIX.
One PDF is read at a time in a worker process (the parallelism comes from
running more workers), with one thread of tesseract's own, so the same bytes
always read as the same text.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from checks.content.ocr_job import STDERR_CHARS, tidy

__all__ = ["Engine", "OcrError", "available", "engine", "read_pages", "tidy"]

JOB = Path(__file__).with_name("ocr_job.py")
INSTALL = (
    "install tesseract-ocr (and tesseract-ocr-<language> packs) or set OCR_EXECUTABLE"
)
# The worker's environment holds its secrets (SECRET_KEY, DATABASE_URL): the
# child and the engine get only these.
PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TESSDATA_PREFIX")

# A second PDF read at once would only take CPU (and memory) from the other
# workers: one at a time in a process.
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
    pdf_seconds: int
    memory_mb: int


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
        pdf_seconds=settings.OCR_PDF_SECONDS,
        memory_mb=settings.OCR_MEMORY_MB,
    )


def available() -> bool:
    return find_executable(_configured()) is not None


def unavailable_reason() -> str:
    """Why there is no OCR, and what turns it on, for a page's error."""
    configured = _configured()
    if configured:
        return f"OCR_EXECUTABLE ({configured}) was not found: {INSTALL}"
    return f"no OCR engine is installed: {INSTALL}"


def read_pages(
    body: bytes, numbers: Sequence[int], ocr: Engine
) -> tuple[dict[int, str], str | None]:
    """The text of the pages `numbers` (0-based) of the PDF `body`, read with
    OCR in a child process, and what stopped it (None when nothing did): the
    pages read before a failure are kept."""
    config = {
        "executable": ocr.executable,
        "languages": ocr.languages,
        "max_pixels": ocr.max_pixels,
        "page_seconds": ocr.page_seconds,
        "pdf_seconds": ocr.pdf_seconds,
        "memory_mb": ocr.memory_mb,
        "numbers": list(numbers),
    }
    env = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    # One thread: tesseract's own threads would compete with the other
    # workers' and gain nothing on a page this size.
    env["OMP_THREAD_LIMIT"] = "1"
    # Isolated (-I): no PYTHON* variables, and not its own folder on the path,
    # whose modules (html.py) would hide the standard library's.
    command = [sys.executable, "-I", str(JOB), json.dumps(config)]
    deadline = time.monotonic() + ocr.pdf_seconds
    # Waiting for the worker's other PDFs counts toward this one's deadline,
    # so a check with many never outlives its time limit.
    if not _one_at_a_time.acquire(timeout=ocr.pdf_seconds):
        return {}, (
            f"the worker was reading other PDFs with OCR for {ocr.pdf_seconds} "
            "seconds (OCR_PDF_SECONDS), so this one was not read this time"
        )
    try:
        # Its own session and process group, the engine in it: the deadline
        # kills them all.
        try:
            process = subprocess.Popen(  # noqa: S603 (our own script)
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=JOB.parent,
                start_new_session=True,
            )
        except OSError as exc:  # no memory or processes left, a missing Python
            return {}, f"OCR could not run: its process could not start ({exc})"
        try:
            left = max(deadline - time.monotonic(), 0.1)
            out, err = process.communicate(body, timeout=left)
        except subprocess.TimeoutExpired:
            _kill(process)
            return {}, (
                f"reading the PDF with OCR took longer than {ocr.pdf_seconds} "
                "seconds (OCR_PDF_SECONDS), so it was stopped"
            )
        except BaseException:
            _kill(process)
            raise
    finally:
        _one_at_a_time.release()
    try:
        answer = json.loads(out) if process.returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        said = err.decode("utf-8", "replace").strip()[-STDERR_CHARS:]
        # Past its address-space limit the child dies of a signal or raises
        # MemoryError; any other failure is its own message, not memory's.
        if process.returncode < 0 or "MemoryError" in said:
            why = (
                f"; it may have needed more than {ocr.memory_mb} MB of memory, "
                "OCR_MEMORY_MB"
            )
        else:
            why = ""
        return {}, (
            f"reading the PDF with OCR stopped (exit status {process.returncode}"
            f"{why}): {said or 'it said nothing'}"
        )
    found = {int(number): str(text) for number, text in answer["pages"].items()}
    return found, answer.get("error")


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
