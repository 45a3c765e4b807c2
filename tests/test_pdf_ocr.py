"""Scanned PDFs (pages that are pictures of text) read with OCR, as Firecrawl's
pdf parser modes say: "ocr" reads every page, "auto" (Pagewatch's default)
only pages without a text layer, "fast" none. The PDFs are made here (text
drawn with Pillow, wrapped as a PDF) and served on 127.0.0.1; the engine is
Debian's tesseract, or a small script standing in for it where a test is
about what was asked of the engine rather than what it read."""

from __future__ import annotations

import io
import json
import os
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
import zlib
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from checks.content import extract
from checks.content.source import ExtractionError
from checks.models import Check, PageResult
from monitors.models import Membership, Monitor
from tests.test_extract import minimal_pdf
from tests.test_runner import run_check, state_of

pytestmark = pytest.mark.django_db

PDF = "application/pdf"
TESSERACT = shutil.which("tesseract")


@pytest.fixture(autouse=True)
def private_targets_allowed(settings):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    settings.OCR_EXECUTABLE = ""  # whatever the developer's environment says


@pytest.fixture
def tesseract() -> str:
    if TESSERACT:
        return TESSERACT
    reason = "tesseract is missing: apt-get install tesseract-ocr to run OCR tests"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason + " (CI=true: not skipping)", pytrace=False)
    pytest.skip(reason)


def scanned_pdf(*pages: list[str], width: int = 1400) -> bytes:
    """A PDF whose pages are images of these lines of text (no text layer),
    at 300 dpi as a scanner would make them."""
    font = ImageFont.load_default(size=44)
    images = []
    for lines in pages:
        image = Image.new("L", (width, 120 + 80 * len(lines)), 255)
        draw = ImageDraw.Draw(image)
        for row, line in enumerate(lines):
            draw.text((60, 60 + 80 * row), line, fill=0, font=font)
        images.append(image.convert("RGB"))
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=300, save_all=True, append_images=images[1:])
    return out.getvalue()


def stand_in_engine(tmp_path: Path, body: str) -> tuple[str, Path]:
    """An executable that logs each run to a file, then does `body` (sh); asked
    for its version, it answers as the engine does."""
    log = tmp_path / "runs.log"
    script = tmp_path / "engine"
    version = 'if [ "$1" = --version ]; then echo "stand-in 1.0"; exit; fi'
    script.write_text(f'#!/bin/sh\n{version}\necho "$@" >> {log}\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script), log


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def watch(api, url: str | list[str], parsers: list | None = None) -> Monitor:
    urls = [url] if isinstance(url, str) else url
    options = {} if parsers is None else {"parsers": parsers}
    created = api.post(
        "/v2/monitor",
        {
            "name": "Council notices",
            "schedule": {"text": "every 30 minutes"},
            "targets": [{"type": "scrape", "urls": urls, "scrapeOptions": options}],
        },
        format="json",
    )
    assert created.status_code == 200, created.content
    return Monitor.objects.get(pk=created.json()["data"]["id"])


def only_page(check: Check) -> PageResult:
    (page,) = check.pages.all()
    return page


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


NOTICE = ["Public notice: the river bridge", "closes on Monday for repairs."]
CHANGED = ["Public notice: the river bridge", "closes on Friday for repairs."]


# --- Reading scanned pages ----------------------------------------------------


@pytest.mark.parametrize("parsers", [[{"type": "pdf", "mode": "ocr"}], None])
def test_a_scanned_pdf_is_read_with_ocr_in_ocr_mode_and_by_default(
    api, site, tesseract, parsers
):
    url = site.page("/notice.pdf", scanned_pdf(NOTICE), content_type=PDF)

    page = only_page(run_check(watch(api, url, parsers)))

    assert page.status == "new", page.error
    assert {"river", "bridge", "closes", "monday", "repairs"} <= words(
        page.current_snapshot.text
    )
    assert page.metadata["ocrPages"] == [1]
    assert "parsers.mode" not in page.metadata.get("notApplied", [])


def test_a_changed_scan_shows_changed_with_the_new_words(api, site, tesseract):
    url = site.page("/notice.pdf", scanned_pdf(NOTICE), content_type=PDF)
    monitor = watch(api, url, [{"type": "pdf", "mode": "auto"}])
    run_check(monitor)
    site.page("/notice.pdf", scanned_pdf(CHANGED), content_type=PDF)

    page = only_page(run_check(monitor))

    assert page.status == "changed", page.error
    added = [line for line in page.diff["text"].splitlines() if line[:1] == "+"]
    removed = [line for line in page.diff["text"].splitlines() if line[:1] == "-"]
    assert "friday" in words(" ".join(added))
    assert "monday" in words(" ".join(removed))


def test_the_same_scan_reads_as_the_same_text_every_time(tesseract):
    body = scanned_pdf(NOTICE)
    options = {"parsers": [{"type": "pdf", "mode": "ocr"}]}

    first = extract(body, content_type=PDF, url="http://x/n.pdf", options=options)
    again = extract(body, content_type=PDF, url="http://x/n.pdf", options=options)

    assert first.source == again.source
    assert "monday" in words(first.source)


def test_fast_mode_never_reads_images_and_says_so(api, site, tmp_path, settings):
    settings.OCR_EXECUTABLE, log = stand_in_engine(tmp_path, "echo Read")
    url = site.page("/notice.pdf", scanned_pdf(NOTICE), content_type=PDF)

    page = only_page(run_check(watch(api, url, [{"type": "pdf", "mode": "fast"}])))

    assert page.status == "error"
    assert '"fast"' in page.error and "not read" in page.error
    assert runs(log) == 0


def test_auto_mode_reads_only_the_pages_without_text(api, site, tmp_path, settings):
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo Read by the engine"
    )
    # Page 2 has no text layer (an empty text object: a picture, for pypdf).
    url = site.page("/list.pdf", minimal_pdf("Basic 19 EUR", ""), content_type=PDF)

    page = only_page(run_check(watch(api, url, [{"type": "pdf", "mode": "auto"}])))

    assert page.status == "new", page.error
    assert page.current_snapshot.text == "Basic 19 EUR\n\nRead by the engine\n"
    assert page.metadata["ocrPages"] == [2]
    assert runs(log) == 1


def test_a_pdf_with_a_text_layer_is_not_read_with_ocr_under_auto(
    api, site, tmp_path, settings
):
    settings.OCR_EXECUTABLE, log = stand_in_engine(tmp_path, "echo Read")
    url = site.page(
        "/list.pdf", minimal_pdf("Basic 19 EUR", "Pro 49 EUR"), content_type=PDF
    )

    for parsers in (None, [{"type": "pdf", "mode": "auto"}]):
        page = only_page(run_check(watch(api, url, parsers)))
        assert page.status == "new", page.error
        assert page.current_snapshot.text == "Basic 19 EUR\n\nPro 49 EUR\n"
        assert "ocrPages" not in page.metadata

    assert runs(log) == 0


# --- Bounds ---------------------------------------------------------------------


def test_at_most_ocr_max_pages_pages_of_a_pdf_are_read_with_ocr(
    api, site, tmp_path, settings
):
    settings.OCR_MAX_PAGES = 2
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo Read"
    )
    scans = scanned_pdf(["One"], ["Two"], ["Three"], width=400)
    url = site.page("/scans.pdf", scans, content_type=PDF)

    page = only_page(run_check(watch(api, url, [{"type": "pdf", "mode": "ocr"}])))

    assert page.status == "new", page.error
    assert runs(log) == 2
    assert page.metadata["ocrPages"] == [1, 2]
    assert page.metadata["numPages"] == 3
    assert "page 3" in page.metadata["ocrWarning"]
    assert "OCR_MAX_PAGES" in page.metadata["ocrWarning"]


def test_a_huge_page_is_rasterized_within_ocr_max_pixels(api, site, tmp_path, settings):
    settings.OCR_MAX_PIXELS = 200_000
    seen = tmp_path / "seen.pnm"
    settings.OCR_EXECUTABLE, log = stand_in_engine(tmp_path, f"cat > {seen}; echo Read")
    # A 200 x 200 inch page: 60000 x 60000 pixels at 300 dpi.
    huge = minimal_pdf("").replace(
        b"/MediaBox [0 0 300 200]", b"/MediaBox [0 0 14400 14400]"
    )
    url = site.page("/huge.pdf", huge, content_type=PDF)

    page = only_page(run_check(watch(api, url, [{"type": "pdf", "mode": "ocr"}])))

    assert page.status == "new", page.error
    with Image.open(seen) as image:
        width, height = image.size
    assert width * height <= 200_000
    assert width > 300  # scaled down, not refused


def test_a_page_the_engine_takes_too_long_on_is_stopped_and_the_page_is_an_error(
    api, site, tmp_path, settings
):
    settings.OCR_PAGE_SECONDS = 1
    pid_file = tmp_path / "pid"
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, f"echo $$ > {pid_file}\nexec sleep 300"
    )
    scans = scanned_pdf(["One"], ["Two"], width=400)
    url = site.page("/scans.pdf", scans, content_type=PDF)

    page = only_page(run_check(watch(api, url, [{"type": "pdf", "mode": "ocr"}])))

    assert page.status == "error"
    assert "page 1" in page.error and "OCR_PAGE_SECONDS" in page.error
    assert runs(log) == 1  # the next page was not tried
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # the engine was killed


def test_an_engine_that_fails_makes_the_page_an_error_with_its_words(
    api, site, tmp_path, settings
):
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo \"Failed loading language 'xx'\" >&2; exit 1"
    )
    url = site.page("/notice.pdf", scanned_pdf(NOTICE), content_type=PDF)

    page = only_page(run_check(watch(api, url, [{"type": "pdf", "mode": "ocr"}])))

    assert page.status == "error"
    assert "Failed loading language 'xx'" in page.error


def test_other_pages_are_fetched_while_the_engine_reads_a_pdf(
    api, site, tmp_path, settings
):
    # The engine waits (up to 10 s) for the other page's redirect to be
    # followed, which takes the batch's event loop: were the PDF read on the
    # loop, the redirect would wait for the engine, which would give up.
    marker = tmp_path / "followed"
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path,
        "cat > /dev/null; i=0\n"
        f"while [ ! -e {marker} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
        f'[ -e {marker} ] && echo "Read while the other page was fetched" || exit 3',
    )

    def target(request):
        marker.touch()
        return 200, {"Content-Type": "text/html"}, b"<p>Opening hours</p>"

    scan = site.page(
        "/notice.pdf", scanned_pdf(["Notice"], width=400), content_type=PDF
    )
    site.handle("/hours", target)
    hop = site.page("/old-hours", status=302, headers={"Location": "/hours"}, delay=0.5)

    check = run_check(watch(api, [scan, hop], [{"type": "pdf", "mode": "ocr"}]))

    pdf = check.pages.get(url=scan)
    assert pdf.status == "new", pdf.error
    assert pdf.current_snapshot.text == "Read while the other page was fetched\n"
    assert runs(log) == 1


# --- Without the engine -------------------------------------------------------------


def test_without_the_engine_a_scan_is_an_error_that_says_how_to_turn_ocr_on(
    api, site, settings
):
    settings.OCR_EXECUTABLE = "/nowhere/tesseract"
    scan = site.page("/notice.pdf", scanned_pdf(NOTICE), content_type=PDF)
    text = site.page("/list.pdf", minimal_pdf("Basic 19 EUR"), content_type=PDF)
    monitor = watch(api, [scan, text], [{"type": "pdf", "mode": "ocr"}])

    check = run_check(monitor)
    answer = api.get(f"/v2/monitor/{monitor.pk}").json()["data"]

    scanned, read = sorted(check.pages.all(), key=lambda p: p.url != scan)
    assert scanned.status == "error"
    assert "OCR_EXECUTABLE" in scanned.error and "tesseract-ocr" in scanned.error
    assert read.status == "new" and read.current_snapshot.text == "Basic 19 EUR\n"
    assert "parsers.mode" in scanned.metadata["notApplied"]
    assert "OCR_EXECUTABLE" in answer["warning"]


def test_the_dashboard_says_plainly_that_scans_cannot_be_read(
    client, team, api, settings, django_user_model, tmp_path
):
    settings.OCR_EXECUTABLE = "/nowhere/tesseract"
    user = django_user_model.objects.create_user("olive", "olive@example.com", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    client.force_login(user)
    monitor = watch(api, "https://example.com/notice.pdf")

    page = client.get(monitor.get_absolute_url()).content.decode()
    settings.OCR_EXECUTABLE, _ = stand_in_engine(tmp_path, "echo Read")
    with_engine = client.get(monitor.get_absolute_url()).content.decode()

    assert 'data-unavailable="ocr"' in page
    assert "Scanned PDFs cannot be read yet." in page
    assert "tesseract-ocr" in page  # for the administrator
    assert "parsers" not in page and "OCR_MAX" not in page
    assert 'data-unavailable="ocr"' not in with_engine


# --- The OCR of a PDF runs in a child process, bounded ----------------------------


def bomb_pdf(side: int) -> bytes:
    """A one-page PDF drawing a side x side greyscale image whose Flate
    stream is tiny (all zeros): PDFium decodes it whole to render the page."""
    compressor = zlib.compressobj(9)
    row = b"\x00" * (side + 1)
    data = b"".join(compressor.compress(row) for _ in range(side))
    data += compressor.flush()
    content = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d >>stream\n%s\nendstream" % (len(content), content),
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d "
        b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode "
        b"/Length %d >>stream\n" % (side, side, len(data)) + data + b"\nendstream",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer << /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


OCR = {"parsers": [{"type": "pdf", "mode": "ocr"}]}
AUTO = {"parsers": [{"type": "pdf", "mode": "auto"}]}


def test_a_pdf_that_takes_pdfium_to_gigabytes_is_read_within_ocr_memory_mb(
    tmp_path, settings
):
    settings.OCR_MEMORY_MB = 400
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo Read"
    )
    body = bomb_pdf(30_000)  # under 1 MB; 900 MB once its image is decoded
    before = peak_rss_mb()

    read = extract(body, content_type=PDF, url="http://x/bomb.pdf", options=OCR)

    # Held to OCR_MEMORY_MB, PDFium leaves out the image it cannot decode,
    # in the child process: the worker's own memory never holds it.
    assert peak_rss_mb() - before < 200
    assert read.source == "Read\n"
    assert runs(log) == 1


def test_a_pdf_past_its_deadline_is_stopped_with_its_engine(tmp_path, settings):
    settings.OCR_PDF_SECONDS = 1
    settings.OCR_PAGE_SECONDS = 5
    pid_file = tmp_path / "pid"
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, f"echo $$ > {pid_file}\nexec sleep 300"
    )
    body = scanned_pdf(["One"], width=400)

    with pytest.raises(ExtractionError) as raised:
        extract(body, content_type=PDF, url="http://x/n.pdf", options=OCR)

    assert "OCR_PDF_SECONDS" in raised.value.message
    engine = int(pid_file.read_text())
    for _ in range(50):  # the orphaned engine is reaped by init, soon
        if not running(engine):
            break
        time.sleep(0.1)
    assert not running(engine)
    assert runs(log) == 1


def test_the_ocr_job_stops_itself_and_its_engine_at_its_deadline(tmp_path):
    # Should the worker be gone (killed at the check's hard time limit), the
    # child still ends at its deadline, and takes the engine with it.
    from checks.content import ocr

    pid_file = tmp_path / "pid"
    engine, log = stand_in_engine(tmp_path, f"echo $$ > {pid_file}\nexec sleep 300")
    config = {
        "executable": engine,
        "languages": "eng",
        "max_pixels": 200_000,
        "page_seconds": 300,
        "pdf_seconds": 1,
        "memory_mb": 1024,
        "numbers": [0],
    }
    job = subprocess.run(  # noqa: S603
        [sys.executable, "-I", str(ocr.JOB), json.dumps(config)],
        input=scanned_pdf(["One"], width=400),
        capture_output=True,
        check=False,
    )

    assert job.returncode == -signal.SIGALRM
    engine_pid = int(pid_file.read_text())
    for _ in range(50):  # the orphaned engine is reaped by init, soon
        if not running(engine_pid):
            break
        time.sleep(0.1)
    assert not running(engine_pid)


def test_an_ocr_failure_under_auto_keeps_the_text_layer_and_warns(tmp_path, settings):
    count = tmp_path / "count"
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path,
        f"cat > /dev/null; echo x >> {count}\n"
        f'if [ "$(wc -l < {count})" -ge 2 ]; then echo "Segmentation fault" >&2; '
        "exit 139; fi\necho Read by the engine",
    )
    body = minimal_pdf("Basic 19 EUR", "", "")

    read = extract(body, content_type=PDF, url="http://x/l.pdf", options=AUTO)

    assert read.source == "Basic 19 EUR\n\nRead by the engine\n"
    assert "page 3" in read.metadata["ocrWarning"]
    assert "Segmentation fault" in read.metadata["ocrWarning"]
    assert runs(log) == 2


def test_an_ocr_failure_under_auto_with_no_text_at_all_is_an_error(tmp_path, settings):
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo broken >&2; exit 1"
    )

    with pytest.raises(ExtractionError) as raised:
        extract(minimal_pdf(""), content_type=PDF, url="http://x/l.pdf", options=AUTO)

    assert "broken" in raised.value.message


def test_the_engine_is_given_a_minimal_environment(tmp_path, settings, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "do-not-pass-me-on")
    monkeypatch.setenv("DATABASE_URL", "postgres://secret@db/pw")
    seen = tmp_path / "env"
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, f"cat > /dev/null; env > {seen}; echo Read"
    )

    extract(minimal_pdf(""), content_type=PDF, url="http://x/l.pdf", options=OCR)

    names = {line.split("=", 1)[0] for line in seen.read_text().splitlines()}
    assert "SECRET_KEY" not in names and "DATABASE_URL" not in names
    assert "PATH" in names
    assert "do-not-pass-me-on" not in seen.read_text()


def test_an_ocr_child_that_cannot_start_under_auto_keeps_the_text_layer_and_warns(
    tmp_path, settings, monkeypatch
):
    from checks.content import ocr

    settings.OCR_EXECUTABLE, log = stand_in_engine(tmp_path, "echo Read")
    monkeypatch.setattr(ocr.sys, "executable", str(tmp_path / "no-python"))
    body = minimal_pdf("Basic 19 EUR", "")

    read = extract(body, content_type=PDF, url="http://x/l.pdf", options=AUTO)

    assert read.source == "Basic 19 EUR\n"
    assert "OCR could not run" in read.metadata["ocrWarning"]
    assert runs(log) == 0


def test_an_ocr_child_that_fails_is_not_blamed_on_memory_but_quoted(
    tmp_path, settings, monkeypatch
):
    from checks.content import ocr

    settings.OCR_EXECUTABLE, log = stand_in_engine(tmp_path, "echo Read")
    job = tmp_path / "job.py"
    job.write_text("raise ValueError('the job broke')\n")
    monkeypatch.setattr(ocr, "JOB", job)

    with pytest.raises(ExtractionError) as raised:
        extract(minimal_pdf(""), content_type=PDF, url="http://x/l.pdf", options=OCR)

    assert "the job broke" in raised.value.message
    assert "MB" not in raised.value.message


def test_an_ocr_child_out_of_memory_says_so(tmp_path, settings, monkeypatch):
    from checks.content import ocr

    settings.OCR_MEMORY_MB = 300
    settings.OCR_EXECUTABLE, log = stand_in_engine(tmp_path, "echo Read")
    job = tmp_path / "job.py"
    job.write_text("raise MemoryError\n")
    monkeypatch.setattr(ocr, "JOB", job)

    with pytest.raises(ExtractionError) as raised:
        extract(minimal_pdf(""), content_type=PDF, url="http://x/l.pdf", options=OCR)

    assert "more than 300 MB" in raised.value.message


def test_an_ocr_child_killed_by_a_signal_may_have_needed_more_memory(
    tmp_path, settings
):
    settings.OCR_MEMORY_MB = 300
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; kill -9 $PPID; sleep 5"
    )

    with pytest.raises(ExtractionError) as raised:
        extract(minimal_pdf(""), content_type=PDF, url="http://x/l.pdf", options=OCR)

    assert "more than 300 MB" in raised.value.message


# --- A check's OCR shares the check's time ------------------------------------------


def ocr_children() -> list[int]:
    """Our OCR child processes still running."""
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat_file.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat_file.parent / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if parent == os.getpid() and b"ocr_job.py" in command:
            found.append(int(stat_file.parent.name))
    return found


class FromTheFirstPdf:
    """The check's time for OCR (ocr._task_deadline), counted from when its
    first PDF asks for it rather than from the task's start, so that planning
    and fetching, however slow, do not use it up."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.until: float | None = None

    def get(self) -> float:
        if self.until is None:
            self.until = time.monotonic() + self.seconds
        return self.until

    def set(self, value: float) -> None:
        return None

    def reset(self, token: None) -> None:
        return None


def ended(pid: int, seconds: float) -> bool:
    """Whether process `pid` ends within `seconds` (it may be no child of
    ours: an engine orphaned by its killed child is reaped by init)."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([handle], [], [], seconds)
        return bool(ready)
    finally:
        os.close(handle)


def test_scans_past_the_checks_time_are_page_errors_and_the_check_completes(
    api, site, tmp_path, settings, monkeypatch
):
    from checks.content import ocr

    monkeypatch.setattr(ocr, "_task_deadline", FromTheFirstPdf(3))
    settings.OCR_PDF_SECONDS = 60
    started = tmp_path / "started"
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, f"echo $$ > {started}.tmp; mv {started}.tmp {started}\nexec sleep 300"
    )
    scans = [
        site.page(
            f"/notice-{n}.pdf",
            scanned_pdf([f"Notice {n}"], width=400),
            content_type=PDF,
        )
        for n in range(4)
    ]
    hours = site.html("/hours", "Hours", "<p>Open daily</p>")

    check = run_check(watch(api, [*scans, hours], [{"type": "pdf", "mode": "ocr"}]))

    assert check.status == Check.Status.PARTIAL
    assert check.pages.get(url=hours).status == "new"
    errors = []
    for scan in scans:
        page = check.pages.get(url=scan)
        assert page.status == "error"
        assert page.error_kind == "ocr_out_of_time"
        assert "CHECK_TIME_LIMIT_SECONDS" in page.error
        errors.append(page.error)
    # The first PDF read held the engine until the check's time was up: the
    # others were never started.
    assert sum("while this PDF was being read" in error for error in errors) == 1
    assert sum("before this PDF's turn" in error for error in errors) == 3
    assert ocr_children() == []
    # Its engine may not have started before its child was stopped (a slow
    # machine); if it did, it is stopped too.
    assert runs(log) <= 1
    if started.exists():
        assert ended(int(started.read_text()), seconds=30)


# --- A new engine or other languages: read again, quietly --------------------------


def wrapped_tesseract(tmp_path: Path, version: str, rewrite: str = "") -> str:
    """Debian's tesseract behind a script that reports `version` and passes
    its text through sed `rewrite` (a new engine reading a little otherwise);
    always English, whatever languages it is asked for."""
    script = tmp_path / "tesseract"
    edit = f" | sed '{rewrite}'" if rewrite else ""
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo "{version}"; echo " lept"; exit; fi\n'
        f'{TESSERACT} stdin stdout -l eng --dpi "$6"{edit}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.mark.parametrize("upgrade", ["version", "languages"])
def test_a_scan_read_by_another_engine_is_read_again_quietly(
    api, site, tmp_path, settings, tesseract, upgrade
):
    settings.OCR_EXECUTABLE = wrapped_tesseract(tmp_path, "tesseract 5.3.0")
    url = site.page("/notice.pdf", scanned_pdf(NOTICE), content_type=PDF)
    monitor = watch(api, url, [{"type": "pdf", "mode": "ocr"}])
    first = only_page(run_check(monitor))
    assert first.metadata["ocrEngine"] == "tesseract 5.3.0 (eng)"
    if upgrade == "version":
        settings.OCR_EXECUTABLE = wrapped_tesseract(
            tmp_path, "tesseract 5.4.0", "s/river/rivers/"
        )
        engine = "tesseract 5.4.0 (eng)"
    else:
        settings.OCR_LANGUAGES = "eng+deu"
        settings.OCR_EXECUTABLE = wrapped_tesseract(
            tmp_path, "tesseract 5.3.0", "s/river/rivers/"
        )
        engine = "tesseract 5.3.0 (eng+deu)"

    again = only_page(run_check(monitor))

    assert again.status == "same", again.error
    assert again.metadata["ocrEngine"] == engine
    assert "rivers" in words(state_of(monitor, url).snapshot.text)

    # The next real change shows that change alone, not the new reading's.
    site.page("/notice.pdf", scanned_pdf(CHANGED), content_type=PDF)
    changed = only_page(run_check(monitor))

    assert changed.status == "changed", changed.error
    lines = [line for line in changed.diff["text"].splitlines() if line[:1] in "+-"]
    assert lines and all("river" not in line for line in lines), lines
    assert "friday" in words(" ".join(lines))


def test_a_scan_read_by_the_same_engine_is_not_read_again(
    api, site, tmp_path, settings, tesseract
):
    settings.OCR_EXECUTABLE = wrapped_tesseract(tmp_path, "tesseract 5.3.0")
    url = site.page("/notice.pdf", scanned_pdf(NOTICE), content_type=PDF)
    monitor = watch(api, url, [{"type": "pdf", "mode": "ocr"}])
    run_check(monitor)
    # Were it read again, this engine's reading would show.
    settings.OCR_EXECUTABLE = wrapped_tesseract(
        tmp_path, "tesseract 5.3.0", "s/river/rivers/"
    )

    again = only_page(run_check(monitor))

    assert again.status == "same"
    assert again.metadata["ocrEngine"] == "tesseract 5.3.0 (eng)"
    assert "rivers" not in words(state_of(monitor, url).snapshot.text)


def test_a_scan_read_by_another_engine_is_fetched_without_validators(
    tmp_path, settings
):
    # A 304 would leave nothing to read again.
    from checks.jobs import PageJob
    from checks.models import PageState
    from checks.pipeline.fetch import request_headers
    from checks.pipeline.outcome import options_hash

    settings.OCR_EXECUTABLE, log = stand_in_engine(tmp_path, "echo Read")

    def asked(read_with: str) -> dict[str, str]:
        job = PageJob(uuid.uuid4(), "https://example.com/n.pdf", {}, 1, uuid.uuid4())
        state = PageState(
            snapshot_id=1,
            options_hash=options_hash({}),
            etag='"v1"',
            metadata={"ocrPages": [1], "ocrEngine": read_with},
        )
        return request_headers(job, state)

    assert asked("stand-in 1.0 (eng)")["If-None-Match"] == '"v1"'
    assert "If-None-Match" not in asked("tesseract 5.3.0 (eng)")
    assert runs(log) == 0  # its version asked, nothing read


# --- Out of the check's time: the page's last content is kept ----------------------


@pytest.mark.parametrize("since", ["a new engine", "a new text layer"])
def test_a_scan_not_read_in_time_keeps_its_last_content_and_is_read_next_time(
    api, site, tmp_path, settings, since
):
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo Scanned bridge notice"
    )
    url = site.page("/fees.pdf", minimal_pdf("Basic 19 EUR", ""), content_type=PDF)
    monitor = watch(api, url, [{"type": "pdf", "mode": "auto"}])
    first = only_page(run_check(monitor))
    assert first.status == "new", first.error
    if since == "a new engine":  # the baseline was read by another: read again
        state = state_of(monitor, url)
        state.metadata["ocrEngine"] = "stand-in 0.9 (eng)"
        state.save(update_fields=["metadata"])
    else:
        site.page("/fees.pdf", minimal_pdf("Basic 21 EUR", ""), content_type=PDF)
    settings.OCR_CHECK_SECONDS = 0

    late = only_page(run_check(monitor))

    assert late.status == "error"
    assert late.error_kind == "ocr_out_of_time"
    assert "the check's time ran out" in late.error
    assert "bridge" in words(state_of(monitor, url).snapshot.text)
    settings.OCR_CHECK_SECONDS = 60

    again = only_page(run_check(monitor))

    assert runs(log) == 2  # read at the first check and at the last
    assert "bridge" in words(state_of(monitor, url).snapshot.text)
    if since == "a new engine":
        assert again.status == "same", again.error
    else:
        assert again.status == "changed", again.error
        lines = [line for line in again.diff["text"].splitlines() if line[:1] in "+-"]
        assert lines and all("bridge" not in line.lower() for line in lines), lines


def test_a_new_engines_reading_that_misses_a_scanned_page_is_not_kept(
    api, site, tmp_path, settings
):
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo Scanned bridge notice"
    )
    url = site.page("/fees.pdf", minimal_pdf("Basic 19 EUR", ""), content_type=PDF)
    monitor = watch(api, url, [{"type": "pdf", "mode": "auto"}])
    run_check(monitor)
    state = state_of(monitor, url)
    state.metadata["ocrEngine"] = "stand-in 0.9 (eng)"  # read by another engine
    state.save(update_fields=["metadata"])
    (tmp_path / "runs.log").unlink()
    (tmp_path / "engine").write_text(  # the new one fails on the scanned page
        "#!/bin/sh\n"
        'if [ "$1" = --version ]; then echo "stand-in 1.0"; exit; fi\n'
        f'echo "$@" >> {log}\ncat > /dev/null; echo broken >&2; exit 1\n'
    )

    again = only_page(run_check(monitor))

    assert again.status == "same", again.error
    assert runs(log) == 1  # read again, by the new engine
    assert "bridge" in words(state_of(monitor, url).snapshot.text)


def test_an_engine_that_did_not_say_its_version_is_asked_again_and_reads_no_pdf_again(
    tmp_path, settings
):
    from checks.content import ocr
    from checks.models import PageState
    from checks.pipeline.outcome import read_by_another_engine

    asked = tmp_path / "asked"
    script = tmp_path / "engine"
    script.write_text(  # says nothing the first time it is asked
        f"#!/bin/sh\necho x >> {asked}\n"
        f'if [ "$(wc -l < {asked})" -ge 2 ]; then echo "stand-in 1.0"; fi\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    settings.OCR_EXECUTABLE = str(script)
    read_by = PageState(metadata={"ocrPages": [1], "ocrEngine": "stand-in 1.0 (eng)"})

    assert read_by_another_engine(read_by) is False  # unknown: nothing to tell
    assert ocr.reading() == "stand-in 1.0 (eng)"  # asked again
    assert read_by_another_engine(read_by) is False
    read_by.metadata["ocrEngine"] = "stand-in 0.9 (eng)"
    assert read_by_another_engine(read_by) is True
    assert len(asked.read_text().splitlines()) == 2


def test_the_engines_version_is_asked_off_the_batchs_event_loop(
    api, site, tmp_path, settings, monkeypatch
):
    import threading

    from checks.content import ocr

    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo Scanned bridge notice"
    )
    url = site.page("/fees.pdf", minimal_pdf("Basic 19 EUR", ""), content_type=PDF)
    monitor = watch(api, url, [{"type": "pdf", "mode": "auto"}])
    run_check(monitor)
    asked_in = []
    answer = ocr._ask_version

    def ask(executable: str) -> str | None:
        asked_in.append(threading.current_thread())
        return answer(executable)

    monkeypatch.setattr(ocr, "_versions", {})  # a worker just started
    monkeypatch.setattr(ocr, "_ask_version", ask)

    again = only_page(run_check(monitor))

    assert again.status == "same", again.error
    assert asked_in and threading.main_thread() not in asked_in


def test_the_engines_version_is_kept_off_the_api(api, site, tmp_path, settings):
    settings.OCR_EXECUTABLE, log = stand_in_engine(
        tmp_path, "cat > /dev/null; echo Scanned bridge notice"
    )
    url = site.page("/fees.pdf", minimal_pdf("Basic 19 EUR", ""), content_type=PDF)
    monitor = watch(api, url, [{"type": "pdf", "mode": "auto"}])
    check = run_check(monitor)

    answer = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}")

    (page,) = answer.json()["data"]["pages"]
    assert page["metadata"]["ocrPages"] == [2]
    assert "ocrEngine" not in page["metadata"]
    assert only_page(check).metadata["ocrEngine"] == "stand-in 1.0 (eng)"  # kept


def test_a_pdf_not_read_in_time_holds_a_crawls_removals_back_as_a_passing_failure():
    from checks.crawl.frontier import may_pass
    from checks.errors import ErrorKind

    assert may_pass(ErrorKind.OCR_OUT_OF_TIME, 200)
