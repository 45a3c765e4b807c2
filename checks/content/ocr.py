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
always read as the same text. All the PDFs of one check task share its time
(within): none is read past the point where the task's time limit would end
the check.

What a PDF was read with (the engine's version and the languages: reading())
is kept with its text, so that a new engine reads it again instead of showing
its different reading as a change of the page.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from checks.content.ocr_job import STDERR_CHARS, tidy

__all__ = [
    "Engine",
    "OcrError",
    "OutOfTime",
    "UNKNOWN_VERSION",
    "available",
    "engine",
    "read_pages",
    "reading",
    "tidy",
    "within",
]

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
# Seconds of the check's time a PDF needs at the least to be worth starting:
# the child's start and one page.
LEAST_SECONDS = 1.0
# Seconds `--version` may take (it answers at once).
VERSION_SECONDS = 10
# Characters of the engine's version line kept.
VERSION_CHARS = 100
# When the OCR of the check task this code runs for must end (on the
# monotonic clock), None outside a check. A context variable rather than an
# argument of every stage between the runner and the PDF: asyncio.to_thread
# hands it to the thread the PDF is read in, and tasks that share a worker's
# threads each see their own.
_task_deadline: ContextVar[float | None] = ContextVar("ocr_deadline", default=None)
# The engine's version line by its file's identity, read once per process:
# an engine upgraded in place is another file (inode, time, size).
_versions: dict[tuple[str, int, int, int], str] = {}


class OcrError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OutOfTime(str):
    """What stopped a PDF's OCR when it was time, not the PDF: the check's
    time ran out, or the worker's other PDFs took it. The same PDF reads
    at a check with time for it, so its page keeps its last content."""


@dataclass(frozen=True)
class Engine:
    executable: str
    languages: str
    max_pages: int
    max_pixels: int
    page_seconds: int
    pdf_seconds: int
    memory_mb: int

    def reading(self) -> str:
        """What a PDF is read with: the engine's version and the languages
        ("tesseract 5.3.0 (eng)"). Kept with the page's text (its metadata's
        ocrEngine), since another engine, or other languages, may read the
        same PDF otherwise."""
        return f"{version(self.executable)} ({self.languages})"


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


def reading() -> str | None:
    """What a PDF read with OCR now is read with (Engine.reading); None
    without an engine."""
    ocr = engine()
    return None if ocr is None else ocr.reading()


UNKNOWN_VERSION = "unknown version"


def version(executable: str) -> str:
    """The first line of `executable --version`, read once per process
    and file; UNKNOWN_VERSION when it says nothing, asked again next time
    (a failure kept for the process's life would read every PDF again, and
    again when another worker knows the version)."""
    try:
        found = os.stat(executable)
    except OSError:
        return UNKNOWN_VERSION
    key = (executable, found.st_ino, found.st_mtime_ns, found.st_size)
    if key not in _versions:
        said = _ask_version(executable)
        if said is None:
            return UNKNOWN_VERSION
        _versions[key] = said
    return _versions[key]


def _ask_version(executable: str) -> str | None:
    try:
        answer = subprocess.run(  # noqa: S603 (the administrator's own program)
            [executable, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=_environment(),
            timeout=VERSION_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    # Tesseract 3 said it on stderr.
    said = answer.stdout.decode("utf-8", "replace") or answer.stderr.decode(
        "utf-8", "replace"
    )
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    return lines[0][:VERSION_CHARS] if lines else None


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """OCR started in this block (by its threads too) ends within `seconds`
    of now, all of its PDFs together; a limit set outside it still holds."""
    until = time.monotonic() + seconds
    outer = _task_deadline.get()
    token = _task_deadline.set(until if outer is None else min(outer, until))
    try:
        yield
    finally:
        _task_deadline.reset(token)


def _environment() -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    # One thread: tesseract's own threads would compete with the other
    # workers' and gain nothing on a page this size.
    env["OMP_THREAD_LIMIT"] = "1"
    return env


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
    pages read before a failure of a page are kept; a PDF stopped at its
    deadline keeps none (its child is killed before it says what it read)."""
    started = time.monotonic()
    own = started + ocr.pdf_seconds
    shared = _task_deadline.get()
    # The check's time, when it ends first: waiting for the worker's other
    # PDFs counts toward it, so a check with many never outlives its limit.
    checks_time = shared is not None and shared < own
    deadline = min(own, shared) if checks_time else own
    if checks_time and deadline - started < LEAST_SECONDS:
        return {}, NOT_REACHED
    if not _one_at_a_time.acquire(timeout=max(deadline - started, 0)):
        return {}, NOT_REACHED if checks_time else _waited(ocr)
    try:
        left = deadline - time.monotonic()
        if checks_time and left < LEAST_SECONDS:
            return {}, NOT_REACHED
        return _read_in_child(body, numbers, ocr, max(left, 0.1), checks_time)
    finally:
        _one_at_a_time.release()


# Said of a PDF whose turn came after its check's time for OCR was up.
NOT_REACHED = OutOfTime(
    "the check's time ran out before this PDF's turn came (the check's time "
    "limit is CHECK_TIME_LIMIT_SECONDS), so it was not read this time"
)
STOPPED_AT_CHECKS_TIME = OutOfTime(
    "the check's time ran out while this PDF was being read (the check's time "
    "limit is CHECK_TIME_LIMIT_SECONDS), so it was stopped"
)


def _waited(ocr: Engine) -> OutOfTime:
    return OutOfTime(
        f"the worker was reading other PDFs with OCR for {ocr.pdf_seconds} "
        "seconds (OCR_PDF_SECONDS), so this one was not read this time"
    )


def _read_in_child(
    body: bytes, numbers: Sequence[int], ocr: Engine, left: float, checks_time: bool
) -> tuple[dict[int, str], str | None]:
    config = {
        "executable": ocr.executable,
        "languages": ocr.languages,
        "max_pixels": ocr.max_pixels,
        "page_seconds": ocr.page_seconds,
        # The child's own deadline, should the worker be gone: the parent's.
        "pdf_seconds": math.ceil(left),
        "memory_mb": ocr.memory_mb,
        "numbers": list(numbers),
    }
    # Isolated (-I): no PYTHON* variables, and not its own folder on the path,
    # whose modules (html.py) would hide the standard library's.
    command = [sys.executable, "-I", str(JOB), json.dumps(config)]
    # Its own session and process group, the engine in it: the deadline
    # kills them all.
    try:
        process = subprocess.Popen(  # noqa: S603 (our own script)
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(),
            cwd=JOB.parent,
            start_new_session=True,
        )
    except OSError as exc:  # no memory or processes left, a missing Python
        return {}, f"OCR could not run: its process could not start ({exc})"
    try:
        out, err = process.communicate(body, timeout=left)
    except subprocess.TimeoutExpired:
        _kill(process)
        if checks_time:
            return {}, STOPPED_AT_CHECKS_TIME
        return {}, (
            f"reading the PDF with OCR took longer than {ocr.pdf_seconds} "
            "seconds (OCR_PDF_SECONDS), so it was stopped"
        )
    except BaseException:
        _kill(process)
        raise
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
