"""A PDF's text, page by page, for comparing as Markdown."""

from __future__ import annotations

import io

from checks.content.metadata import base_metadata
from checks.content.options import Options
from checks.content.source import Extracted, ExtractionError, reason


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

    if not any(page.strip() for page in pages):
        # Firecrawl's "auto" and "ocr" modes would read such pages with OCR;
        # Pagewatch does not, and an empty text would never show a change.
        raise ExtractionError(
            "The PDF has no text in it (scanned pages are images, which are "
            "not read as text); nothing to compare"
        )
    text = "\n\n".join(
        "\n".join(line.rstrip() for line in page.strip().splitlines())
        for page in pages
        if page.strip()
    )
    metadata = base_metadata(content_type, url)
    metadata["title"] = title
    metadata["numPages"] = count
    return Extracted(
        source=text + "\n" if text else "",
        links=[] if "links" in opts.formats else None,
        images=[] if "images" in opts.formats else None,
        metadata=metadata,
    )
