"""Browser pages in real workers (issue #20): 20 pages built by scripts,
checked in the browser, beside a plain fetch of the same pages.

The pages are §1's articles served as single-page apps (bench.pages.app_page:
an empty root that a script fills from JSON in the page), every one answering
after wb.LATENCY_MS, on one loopback host. Two workers run as the Procfile
starts them: the plain worker (`--queues=celery,upkeep`, two processes) and
the browser worker (`--queues=browser --concurrency=1`, one process that
starts its own Chromium). Each repetition, on fresh monitors:

* the baseline, a plain httpx fetch of the 20 URLs with the worker's limits;
* a check of a monitor set to plain HTTP (`fetchWith: http`), by the plain
  worker: what the same pages cost without a browser (their text unseen);
* a check of a monitor set to the browser (`fetchWith: browser`), by the
  browser worker: every page rendered in Chromium.

Pages/s from queueing each check to its finished status; peak PSS of the
worker that did the work, its whole process tree (Chromium and Playwright's
driver included for the browser worker), sampled as bench.crawlbench does.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench import procs
from bench import workerbench as wb
from bench.crawlbench import PeakPss
from bench.env import BenchEnv, BenchError
from bench.report import Row, Section, ratio_text

if TYPE_CHECKING:
    from monitors.models import Monitor

PAGES = 20
GENERATION = 800  # of the article texts (bench.pages)
WARM_UP_PAGES = 2


@dataclass
class Visit:
    """One check: its sample and the working worker's peak PSS."""

    sample: wb.Sample
    peak_mb: float

    @property
    def pages_per_second(self) -> float:
        return PAGES / self.sample.seconds


@dataclass
class Runs:
    baselines: list[wb.Fetch] = field(default_factory=list)
    plain: list[Visit] = field(default_factory=list)
    browser: list[Visit] = field(default_factory=list)
    # The browser worker before its first page, and after warming up.
    idle_mb: float = 0.0
    warm_mb: float = 0.0

    def baseline_speed(self) -> float:
        return PAGES / statistics.median(f.seconds for f in self.baselines)


def monitor_fetching_with(fetch_with: str, urls: list[str]) -> Monitor:
    from monitors.models import Monitor

    monitor = wb.make_monitor(f"{fetch_with} {time.monotonic_ns()}", [urls])
    Monitor.objects.filter(pk=monitor.pk).update(fetch_with=fetch_with)
    monitor.refresh_from_db()
    return monitor


def visit(
    fetch_with: str, urls: list[str], worker: wb.Worker, server: wb.PageServer
) -> Visit:
    monitor = monitor_fetching_with(fetch_with, urls)
    with PeakPss(worker.pid) as peak:
        sample = wb.run_check(monitor, worker, server)
    return Visit(sample, peak.peak_mb)


def _expect_rendered(visit: Visit, problems: list[str], browser: bool) -> None:
    """Every page new, fetched the way its monitor says; the browser's pages
    with the article's text, the plain ones without it."""
    check = visit.sample.check
    wb.expect(check, problems, new=PAGES)
    pages = list(check.pages.select_related("current_snapshot"))
    fetched = {p.metadata.get("fetchedWith") for p in pages}
    if fetched != {"browser" if browser else "http"}:
        problems.append(f"check {check.pk}: pages fetched with {fetched}")
    texts = [len(p.current_snapshot.text) if p.current_snapshot else 0 for p in pages]
    if browser and min(texts, default=0) < 1000:
        problems.append(f"check {check.pk}: a rendered page has {min(texts)} chars")
    if not browser and max(texts, default=0) >= 1000:
        problems.append(f"check {check.pk}: a plain page has {max(texts)} chars")


def measure(
    environment: BenchEnv, server: wb.PageServer, reps: int, problems: list[str]
) -> Runs:
    runs = Runs()
    server.show(PAGES, GENERATION, variant=0, delay_ms=wb.LATENCY_MS, scripted=True)
    urls = server.urls(PAGES, 1)
    with (
        wb.Worker(environment, 2, queues="celery,upkeep") as plain,
        wb.Worker(environment, 1, queues="browser") as browser,
    ):
        runs.idle_mb = procs.tree_pss_mb(browser.pid)
        warm = visit("browser", urls[:WARM_UP_PAGES], browser, server)
        if warm.sample.check.status != "completed":
            raise BenchError(f"browser warm-up failed:\n{browser.log_tail()}")
        runs.warm_mb = procs.tree_pss_mb(browser.pid)
        visit("http", urls[:WARM_UP_PAGES], plain, server)
        for rep in range(reps):
            runs.baselines.append(wb.baseline_fetch(urls))
            runs.plain.append(visit("http", urls, plain, server))
            _expect_rendered(runs.plain[-1], problems, browser=False)
            runs.browser.append(visit("browser", urls, browser, server))
            _expect_rendered(runs.browser[-1], problems, browser=True)
            print(
                f"  browser rep {rep + 1}:"
                f" {runs.browser[-1].pages_per_second:.1f} pages/s in the browser,"
                f" {runs.plain[-1].pages_per_second:.1f} plain,"
                f" {PAGES / runs.baselines[-1].seconds:.1f} httpx;"
                f" peak PSS {runs.browser[-1].peak_mb:.0f} MB",
                flush=True,
            )
    return runs


def bench_browser(
    environment: BenchEnv, reps: int, rows: list[Row], problems: list[str]
) -> Section:
    from django.conf import settings

    with wb.PageServer(hosts=1) as server:
        runs = measure(environment, server, reps, problems)
    base = runs.baseline_speed()
    browser = statistics.median(v.pages_per_second for v in runs.browser)
    plain = statistics.median(v.pages_per_second for v in runs.plain)
    browser_mb = statistics.median(v.peak_mb for v in runs.browser)
    plain_mb = statistics.median(v.peak_mb for v in runs.plain)
    rows.append(
        Row(
            f"Browser pages/s, {PAGES} pages built by scripts, at {wb.LATENCY_MS} ms"
            " (`fetchWith: browser`, the browser worker)",
            f"{base:.1f} pages/s (plain httpx fetch of the same pages)",
            f"{browser:.1f} pages/s",
            browser / base,
            "",
            None,
        )
    )
    rows.append(
        Row(
            f"Peak PSS of the worker that checks {PAGES} script-built pages:"
            " browser worker vs plain worker",
            f"{plain_mb:.0f} MB (plain worker, 2 processes, `fetchWith: http`)",
            f"{browser_mb:.0f} MB (browser worker, 1 process and its Chromium)",
            browser_mb / plain_mb,
            "",
            None,
        )
    )
    section = Section(f"10. Browser pages ({PAGES} pages built by scripts)")
    section.add(
        f"§1's articles served as single-page apps (bench/pages.py `app_page`: an"
        ' empty `<div id="root">` that a script fills from JSON in the page), on'
        f" one loopback host, each answering after {wb.LATENCY_MS} ms. Workers as"
        " the Procfile starts them: the plain worker (`--queues=celery,upkeep`,"
        " 2 processes) and the browser worker (`--queues=browser`, 1 process,"
        f" BROWSER_CONCURRENCY = {settings.BROWSER_CONCURRENCY} pages at a time,"
        f" batches of BROWSER_BATCH_SIZE = {settings.BROWSER_BATCH_SIZE}), warmed"
        f" up with a check of {WARM_UP_PAGES} pages each. Each repetition checks"
        " the pages on fresh monitors, once plainly and once in the browser,"
        f" after a plain httpx fetch of them. Medians of {reps} repetitions.",
        "",
        "| Repetition | httpx fetch | Plain check | Browser check"
        " | Browser ÷ httpx | Worker CPU per page, plain / browser"
        " | Peak PSS, plain / browser worker |",
        "|---|---|---|---|---|---|---|",
    )
    pairs = zip(runs.baselines, runs.plain, runs.browser, strict=True)
    for rep, (fetch, plain_visit, browser_visit) in enumerate(pairs, 1):
        section.add(
            f"| {rep} | {PAGES / fetch.seconds:.1f} pages/s"
            f" | {plain_visit.pages_per_second:.1f} pages/s"
            f" | {browser_visit.pages_per_second:.1f} pages/s"
            f" | {ratio_text(browser_visit.pages_per_second * fetch.seconds / PAGES)}"
            f" | {plain_visit.sample.worker_cpu * 1000 / PAGES:.1f} ms /"
            f" {browser_visit.sample.worker_cpu * 1000 / PAGES:.1f} ms"
            f" | {plain_visit.peak_mb:.0f} MB / {browser_visit.peak_mb:.0f} MB |"
        )
    section.add(
        "",
        f"- The plain check makes {plain:.1f} pages/s"
        f" ({ratio_text(plain / base)} of the httpx fetch) and sees none of the"
        " articles' text: on pages like these only the browser sees the content.",
        f"- The browser worker's tree: {runs.idle_mb:.0f} MB before its first page,"
        f" {runs.warm_mb:.0f} MB with Chromium started (after the warm-up); its"
        " peak while rendering is the row above. Chromium starts after Celery's"
        " fork, in the process that first needs it, and stays for"
        " BROWSER_RESTART_AFTER_PAGES pages or BROWSER_IDLE_SECONDS idle.",
        "- Where a browser page's CPU goes: nearly all of it is Chromium's. While"
        " this benchmark was written, per page: ~30 ms in the worker process,"
        " ~27 ms in Playwright's driver, ~270 ms in Chromium's browser process"
        " and ~650 ms in the renderer processes each page's fresh context"
        " starts (its cross-site ad frames get renderers of their own) and"
        " ends. A fresh context per page is what keeps one page's cookies,"
        " storage and service workers from the next.",
    )
    return section
