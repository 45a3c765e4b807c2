"""What a monitor asks for that this server cannot do, and the setting that
would let it: one list, said to integrators in the API's `warning` and to
staff on the monitor's page in the dashboard.

Each is saved and kept as asked, so it works the moment an administrator
sets the service up; until then checks run without it and say so per page.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from checks.ai.formats import wants
from checks.browser.executable import available as browser_available
from checks.content.ocr import available as ocr_available
from checks.content.options import parse_options
from monitors import search_provider
from monitors.judging import judge_available
from monitors.models import Monitor


@dataclass(frozen=True)
class Unavailable:
    key: str
    api: str  # for integrators, in the contract's field names
    title: str  # for staff: what they will not get
    plain: str  # for staff: what happens instead
    setting: str  # for the administrator: what turns it on


BROWSER = Unavailable(
    key="browser",
    api=(
        "Some of its pages need a browser (fetchWith, or options such as waitFor, "
        "actions or screenshots), and this server has none: they are reported as "
        "errors until BROWSER_EXECUTABLE names a Chromium."
    ),
    title="No browser is installed on this server.",
    plain=(
        "Some of this monitor's pages need one (to wait for the page, perform "
        "steps on it, take screenshots or show it as on a phone), so they will be "
        "reported as errors until one is."
    ),
    setting="install Chromium (apt-get install chromium) or set BROWSER_EXECUTABLE.",
)
EXTRACTION = Unavailable(
    key="extraction",
    api=(
        "JSON extraction (a json format, or changeTracking's json mode) needs an "
        "AI model, and this server has none: those pages are reported as errors "
        "until LLM_BASE_URL (and LLM_MODEL) name an OpenAI-compatible endpoint."
    ),
    title="Facts cannot be picked out of these pages yet.",
    plain=(
        "This monitor asks an AI model to pick particular facts out of its pages, "
        "and none is set up for this Pagewatch, so those pages are reported as "
        "errors until one is."
    ),
    setting="set LLM_BASE_URL (and LLM_MODEL) to an OpenAI-compatible endpoint.",
)
SUMMARY = Unavailable(
    key="summary",
    api=(
        "The summary format needs an AI model, and this server has none: pages "
        "get no summary (it is listed in their metadata.notApplied) until "
        "LLM_BASE_URL (and LLM_MODEL) name an OpenAI-compatible endpoint."
    ),
    title="Pages are not summarised yet.",
    plain=(
        "This monitor asks an AI model for a short summary of each page, and none "
        "is set up for this Pagewatch, so its pages have no summary until one is."
    ),
    setting="set LLM_BASE_URL (and LLM_MODEL) to an OpenAI-compatible endpoint.",
)
JUDGE = Unavailable(
    key="judge",
    api=(
        "Changes are not judged against the goal: this server has no AI model, "
        "so they are reported as not judged until LLM_BASE_URL (and LLM_MODEL) "
        "name an OpenAI-compatible endpoint."
    ),
    title="Changes are not judged against the goal yet.",
    plain=(
        "No AI model is set up for this Pagewatch, so every change is reported, "
        "marked “not judged”, until one is."
    ),
    setting="set LLM_BASE_URL (and LLM_MODEL) to an OpenAI-compatible endpoint.",
)
ROBOTS = Unavailable(
    key="robots",
    api=(
        "crawlOptions.ignoreRobotsTxt and robotsUserAgent are not honoured on this "
        "server: its crawls follow robots.txt until CRAWL_ALLOW_IGNORE_ROBOTS=true."
    ),
    title="This site's rules for automated visitors are followed.",
    plain=(
        "The crawl is set to ignore the site's robots.txt rules, which this "
        "Pagewatch does not allow, so pages those rules forbid are left out."
    ),
    setting="set CRAWL_ALLOW_IGNORE_ROBOTS=true to allow it.",
)
OCR = Unavailable(
    key="ocr",
    api=(
        "Scanned PDF pages (pictures of text) are not read with OCR: this server "
        "has no OCR engine, so such PDFs are read from their text layer only "
        "(parsers' mode is listed in each page's metadata.notApplied) until "
        "tesseract-ocr is installed or OCR_EXECUTABLE names it."
    ),
    title="Scanned PDFs cannot be read yet.",
    plain=(
        "This monitor watches PDF documents, and the text of a scanned page (a "
        "picture of a page) cannot be read on this Pagewatch, so such pages are "
        "reported as having no text until a text reader is installed."
    ),
    setting=(
        "install tesseract-ocr (apt-get install tesseract-ocr, plus "
        "tesseract-ocr-<language> for languages other than English) or set "
        "OCR_EXECUTABLE."
    ),
)
SEARCH = Unavailable(
    key="search",
    # The same words as each search target's own reason, which the API's
    # warning already holds: said once there.
    api=search_provider.NOT_CONFIGURED,
    title="This monitor's web searches are not run yet.",
    plain=(
        "No web search service is set up for this Pagewatch, so its checks find "
        "nothing on the web until one is."
    ),
    setting=(
        "set SEARXNG_URL (a self-hosted SearXNG), or BRAVE_API_KEY, TAVILY_API_KEY "
        "or FIRECRAWL_API_KEY (see the README, “Watching the web”)."
    ),
)


def unavailable(monitor: Monitor) -> list[Unavailable]:
    """What `monitor` asks for that this server cannot do, in a fixed order."""
    targets = monitor.target_list
    found = []
    if any(t.not_run_reason == search_provider.NOT_CONFIGURED for t in targets):
        found.append(SEARCH)
    if monitor.needs_browser and not browser_available():
        found.append(BROWSER)
    if not judge_available():
        if any(wants(t.scrape_options or {}).extraction for t in targets):
            found.append(EXTRACTION)
        if any(wants(t.scrape_options or {}).summary for t in targets):
            found.append(SUMMARY)
        if monitor.judging:
            found.append(JUDGE)
    if any(_reads_scans(t.scrape_options or {}, t.urls) for t in targets) and (
        not ocr_available()
    ):
        found.append(OCR)
    if not settings.CRAWL_ALLOW_IGNORE_ROBOTS and any(
        t.kind is not None and t.kind.ignores_robots(t) for t in targets
    ):
        found.append(ROBOTS)
    return found


def _reads_scans(options: dict, urls: object) -> bool:
    """Whether a target asks for OCR of PDFs: a pdf parser in mode "ocr" or
    "auto", or PDF addresses read in the default mode (which is "auto")."""
    read = parse_options(options)
    if not read.parse_pdf or read.pdf_mode == "fast":
        return False
    if read.pdf_mode is not None:
        return True
    return any(
        isinstance(url, str)
        and url.split("?")[0].split("#")[0].lower().endswith(".pdf")
        for url in (urls if isinstance(urls, list) else [])
    )


def missing_services() -> dict[str, Unavailable]:
    """The services this server lacks, whatever a monitor asks for, by key
    (search, browser, judge): what the monitor form tells staff, with the
    setting an administrator turns each on with, before a monitor asks."""
    missing = []
    if search_provider.not_run_reason():
        missing.append(SEARCH)
    if not browser_available():
        missing.append(BROWSER)
    if not judge_available():
        missing.append(JUDGE)
    return {service.key: service for service in missing}
