"""checks.affinity: a running check's threads share one CPU, its pool does not."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from checks import affinity, analysis, runner
from checks.models import Check
from monitors.models import Monitor, Target

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or affinity.current_cpu() is None,
    reason="thread affinity is a Linux feature",
)


class Sleeper:
    """A thread that waits until told to stop, and can report its own mask."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.stop.wait, daemon=True)
        self.thread.start()

    @property
    def mask(self) -> set[int]:
        assert self.thread.native_id is not None
        return os.sched_getaffinity(self.thread.native_id)

    def end(self) -> None:
        self.stop.set()
        self.thread.join()


@pytest.fixture
def sleeper() -> Iterator[Sleeper]:
    thread = Sleeper()
    yield thread
    thread.end()


def test_every_thread_shares_the_callers_cpu_inside_and_gets_its_mask_back(
    sleeper: Sleeper,
) -> None:
    before = os.sched_getaffinity(0)
    with affinity.threads_on_one_cpu() as cpu:
        assert cpu is not None and cpu in before
        assert os.sched_getaffinity(0) == {cpu}
        assert sleeper.mask == {cpu}
        started_inside = Sleeper()
        assert started_inside.mask == {cpu}
    assert os.sched_getaffinity(0) == before
    assert sleeper.mask == before
    assert started_inside.mask == before  # still running: given the caller's mask
    started_inside.end()


def test_a_thread_with_its_own_mask_keeps_it_afterwards(sleeper: Sleeper) -> None:
    own = {min(os.sched_getaffinity(0))}
    os.sched_setaffinity(sleeper.thread.native_id, own)
    with affinity.threads_on_one_cpu():
        pass
    assert sleeper.mask == own


def test_nothing_is_pinned_when_disabled(sleeper: Sleeper) -> None:
    before = os.sched_getaffinity(0)
    with affinity.threads_on_one_cpu(enabled=False) as cpu:
        assert cpu is None
        assert os.sched_getaffinity(0) == before
        assert sleeper.mask == before


def test_a_thread_that_ends_inside_the_block_is_no_trouble() -> None:
    before = os.sched_getaffinity(0)
    with affinity.threads_on_one_cpu() as cpu:
        short = Sleeper()
        short.end()
        assert cpu is not None
    assert os.sched_getaffinity(0) == before


@pytest.fixture
def masks_at_fetch(settings, monkeypatch) -> dict[str, object]:
    """Filled as a check's fetcher thread starts: its own mask, the worker
    thread's and those of the analysis pool's processes."""
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    seen: dict[str, object] = {}
    fetch_all = runner.Fetcher._main

    def fetcher_main(self: runner.Fetcher) -> None:
        seen["fetcher"] = os.sched_getaffinity(0)
        seen["worker"] = os.sched_getaffinity(threading.main_thread().native_id)
        executor = analysis._state.executor
        seen["pool"] = [
            os.sched_getaffinity(pid) for pid in getattr(executor, "_processes", {})
        ]
        fetch_all(self)

    monkeypatch.setattr(runner.Fetcher, "_main", fetcher_main)
    return seen


def check_of(team, urls: list[str]) -> Check:
    monitor = Monitor.objects.create(team=team, name="Docs", schedule_cron="0 * * * *")
    Target.objects.create(monitor=monitor, type="scrape", urls=urls)
    return runner.run(Check.objects.create(monitor=monitor, trigger="manual"))


@pytest.mark.django_db
def test_a_check_fetches_on_the_workers_cpu_while_its_pool_may_use_every_cpu(
    team, site, settings, masks_at_fetch
) -> None:
    settings.CHECK_CPU_WORKERS = 2
    before = os.sched_getaffinity(0)
    urls = [site.html(f"/p{i}", f"P{i}", f"<p>Page {i}</p>") for i in range(3)]

    check = check_of(team, urls)

    assert check.status == Check.Status.COMPLETED
    assert check.summary["new"] == 3
    fetcher_cpus = masks_at_fetch["fetcher"]
    assert isinstance(fetcher_cpus, set) and len(fetcher_cpus) == 1
    assert masks_at_fetch["worker"] == fetcher_cpus
    pool = masks_at_fetch["pool"]
    assert isinstance(pool, list) and pool and all(mask == before for mask in pool)
    assert os.sched_getaffinity(0) == before


@pytest.mark.django_db
def test_a_check_pins_nothing_when_the_setting_is_off(
    team, site, settings, masks_at_fetch
) -> None:
    settings.CHECK_THREADS_ON_ONE_CPU = False
    settings.CHECK_CPU_WORKERS = 2
    before = os.sched_getaffinity(0)

    check_of(team, [site.html("/a", "A", "<p>A</p>")])

    assert masks_at_fetch["fetcher"] == before
    assert masks_at_fetch["worker"] == before


@pytest.mark.django_db
def test_a_check_without_an_analysis_pool_pins_nothing(
    team, site, settings, masks_at_fetch
) -> None:
    """Inline analysis is the worker's parallel work: several such workers
    pinned to one CPU could leave the others idle."""
    settings.CHECK_CPU_WORKERS = 0
    before = os.sched_getaffinity(0)

    check_of(team, [site.html("/a", "A", "<p>A</p>")])

    assert masks_at_fetch["fetcher"] == before
    assert masks_at_fetch["worker"] == before
