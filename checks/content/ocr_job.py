"""The OCR of one PDF, run as a child process of the worker (checks.content.ocr
starts it): PDFium renders each page and tesseract reads it, here, so that a
PDF that takes PDFium to gigabytes, or an engine that never ends, costs this
process and not the worker.

Run by its file path, not as a module of the project (importing `checks`
would load the whole content package): it imports nothing of Pagewatch.
Reads the PDF on stdin and its settings as JSON in argv[1]; writes JSON on
stdout: {"pages": {"<0-based number>": "text", ...}, "error": str | null},
the pages read before the first failure, if any.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import resource
import signal
import subprocess
import sys
from typing import Any

# Scanners and tesseract's models work at about 300 dots per inch.
DPI = 300
# Characters of the engine's complaint kept in a page's error.
STDERR_CHARS = 300
# Linux's prctl option: a signal sent to this process when its parent dies.
PR_SET_PDEATHSIG = 1


class OcrError(Exception):
    pass


def main() -> int:
    config = json.loads(sys.argv[1])
    limit = config["memory_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # Should the worker die without killing us, the kernel stops us at the
    # deadline all the same (SIGALRM's default action, even inside PDFium's
    # C code, where a Python handler would wait), and the engine, which
    # inherits the CPU limit, cannot compute for longer either.
    seconds = config["pdf_seconds"] + 1
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(seconds)
    body = sys.stdin.buffer.read()
    pages: dict[str, str] = {}
    error = None
    try:
        for number, text in read_pages(body, config):
            pages[str(number)] = text
    except OcrError as exc:
        error = str(exc)
    except MemoryError:
        error = _memory(config)
    sys.stdout.write(json.dumps({"pages": pages, "error": error}))
    return 0


def _memory(config: dict[str, Any]) -> str:
    return (
        f"reading the PDF with OCR needed more than {config['memory_mb']} MB "
        "of memory (OCR_MEMORY_MB), so it was stopped"
    )


def read_pages(body: bytes, config: dict[str, Any]):
    import pypdfium2

    try:
        document = pypdfium2.PdfDocument(body)
    except pypdfium2.PdfiumError as exc:
        raise OcrError(f"the PDF could not be opened for OCR ({exc})") from exc
    try:
        for number in config["numbers"]:
            image, dpi = _image(document, number, config)
            yield number, _read(image, dpi, number, config)
    finally:
        document.close()


def _image(document: Any, number: int, config: dict[str, Any]) -> tuple[bytes, int]:
    """Page `number` as a greyscale PGM image, scaled down to fit max_pixels,
    and its dots per inch."""
    import pypdfium2

    max_pixels = config["max_pixels"]
    try:
        page = document[number]
    except pypdfium2.PdfiumError as exc:
        raise OcrError(f"page {number + 1} could not be opened ({exc})") from exc
    try:
        width, height = page.get_size()
        area = max(width * height, 1.0)
        scale = min(DPI / 72, math.sqrt(max_pixels / area))
        # Rounding each side up could pass the cap by a row: shave it.
        while math.ceil(width * scale) * math.ceil(height * scale) > max_pixels:
            scale *= 0.999
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            buffer = io.BytesIO()
            bitmap.to_pil().convert("L").save(buffer, "PPM")
            return buffer.getvalue(), max(1, round(scale * 72))
        finally:
            bitmap.close()
    except pypdfium2.PdfiumError as exc:
        raise OcrError(f"page {number + 1} could not be rendered ({exc})") from exc
    finally:
        page.close()


def _read(image: bytes, dpi: int, number: int, config: dict[str, Any]) -> str:
    command = [config["executable"], "stdin", "stdout", "-l", config["languages"]]
    command += ["--dpi", str(dpi)]
    # In our process group (so the worker's kill at the deadline reaches it),
    # with our environment, which the worker already made minimal.
    process = subprocess.Popen(  # noqa: S603 (the administrator's own program)
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_die_with_parent,  # noqa: PLW1509 (we run no threads)
    )
    try:
        out, err = process.communicate(image, timeout=config["page_seconds"])
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise OcrError(
            f"reading page {number + 1} with OCR took longer than "
            f"{config['page_seconds']} seconds (OCR_PAGE_SECONDS), so it was stopped"
        ) from None
    if process.returncode != 0:
        said = err.decode("utf-8", "replace").strip()[-STDERR_CHARS:]
        raise OcrError(
            f"the OCR engine failed on page {number + 1} "
            f"(exit status {process.returncode}): {said or 'it said nothing'}"
        )
    return tidy(out.decode("utf-8", "replace"))


def _die_with_parent() -> None:
    """In the engine, before it starts: killed when this process dies (at its
    own deadline, should the worker be gone)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def tidy(text: str) -> str:
    """The engine's text as page text: no form feeds, no trailing spaces, at
    most one blank line in a row."""
    lines = [line.rstrip() for line in text.replace("\f", "\n").splitlines()]
    kept: list[str] = []
    for line in lines:
        if line or (kept and kept[-1]):
            kept.append(line)
    return "\n".join(kept).strip()


if __name__ == "__main__":
    sys.exit(main())
