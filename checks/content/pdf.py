"""A PDF's text, page by page, for comparing as Markdown.

Its text layer is read first; pages that are pictures (scans) are read with
OCR as the pdf parser's mode says: "ocr" every page, "auto" (also when no
mode is given: a scanned PDF would otherwise be watched as nothing) the
pages with no text or almost none, "fast" none.
"""

from __future__ import annotations

import io
from typing import Any

from checks.content import ocr
from checks.content.metadata import base_metadata
from checks.content.options import Options
from checks.content.source import Extracted, ExtractionError, OutOfTimeError, reason


def extract_pdf(body: bytes, content_type: str, url: str, opts: Options) -> Extracted:
    if not opts.parse_pdf:
        raise ExtractionError(
            "The page is a PDF and PDF parsing is turned off (parsers); "
            "nothing to compare"
        )
    from pypdf import PdfReader  # imported lazily: most checks never see a PDF

    # pypdf parses untrusted bytes and raises many exception types on damaged
    # files (KeyError, ValueError, its own PdfReadError, ...): any of them means
    # "this PDF could not be read", which is a page result, not a crash.
    try:
        reader = PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            reader.decrypt("")
        count = len(reader.pages)
        read = reader.pages[: opts.pdf_max_pages or count]
        pages = [(page.extract_text() or "") for page in read]
        info = reader.metadata
        title = str(info.title) if info and info.title else None
    except Exception as exc:
        raise ExtractionError(f"PDF could not be read: {reason(exc)}") from exc

    metadata = base_metadata(content_type, url)
    mode = opts.pdf_mode or "auto"
    if mode != "fast":
        pages = _with_ocr(body, pages, mode, metadata)
    if not any(page.strip() for page in pages):
        raise ExtractionError(_no_text(mode, "ocrPages" in metadata))
    text = "\n\n".join(
        "\n".join(line.rstrip() for line in page.strip().splitlines())
        for page in pages
        if page.strip()
    )
    metadata["title"] = title
    metadata["numPages"] = count
    return Extracted(
        source=text + "\n" if text else "",
        links=[] if "links" in opts.formats else None,
        images=[] if "images" in opts.formats else None,
        metadata=metadata,
    )


# Under "auto", a page with fewer visible characters than this in its text
# layer is read with OCR: a scan often carries a stamped page number, and a
# short line of real text ("Pro 49 EUR") is left as it is.
ALMOST_NO_TEXT = 5


def _visible(text: str) -> int:
    return sum(1 for char in text if not char.isspace())


def _with_ocr(
    body: bytes, pages: list[str], mode: str, metadata: dict[str, Any]
) -> list[str]:
    """`pages` with those the mode reads with OCR replaced by what OCR read;
    the pages it read (and those it left over its limit) in `metadata`."""
    wanted = [
        number
        for number, text in enumerate(pages)
        if mode == "ocr" or _visible(text) < ALMOST_NO_TEXT
    ]
    engine = ocr.engine() if wanted else None
    if engine is None:
        return pages
    read, left = wanted[: engine.max_pages], wanted[engine.max_pages :]
    found, failure = ocr.read_pages(body, read, engine)
    if isinstance(failure, ocr.OutOfTime):
        # Not the PDF's fault: its text layer alone would be shown as its
        # scanned words removed, and then kept, its bytes unchanged, for good.
        raise OutOfTimeError(
            f"The PDF's scanned pages could not be read with OCR: {failure}"
        )
    if failure is not None and mode == "ocr":
        raise ExtractionError(f"The PDF could not be read with OCR: {failure}")
    pages = list(pages)
    for number, text in found.items():
        if mode == "ocr" or _visible(text) > _visible(pages[number]):
            pages[number] = text
    metadata["ocrPages"] = [number + 1 for number in sorted(found)]
    if found:
        metadata["ocrEngine"] = engine.reading()
    warnings = []
    if failure is not None:
        # Under "auto" the text layer was read before OCR existed: a failure
        # keeps it, and the page is an error only if nothing has text at all.
        warnings.append(f"Some pages could not be read with OCR: {failure}.")
        if not any(page.strip() for page in pages):
            raise ExtractionError(
                f"The PDF has no text layer and could not be read with OCR: {failure}"
            )
    if left:
        more = (
            f"page {left[0] + 1} was"
            if len(left) == 1
            else f"{len(left)} pages from page {left[0] + 1} on were"
        )
        warnings.append(
            f"At most {engine.max_pages} pages of a PDF are read with OCR "
            f"(OCR_MAX_PAGES): {more} not."
        )
    if warnings:
        metadata["ocrWarning"] = " ".join(warnings)
    return pages


def _no_text(mode: str, read_with_ocr: bool) -> str:
    if read_with_ocr:
        return (
            "The PDF has no text in it, even read with OCR (its pages may be "
            "blank); nothing to compare"
        )
    if mode == "fast":
        why = 'the pdf parser\'s mode "fast" does not read them (use "auto")'
    else:
        why = f"they are not read because {ocr.unavailable_reason()}"
    return (
        "The PDF has no text in it: its pages are pictures (a scan), and "
        f"{why}; nothing to compare"
    )
