"""The pure CPU work of a check, and the process pool that runs it.

checks.runner fetches pages in a thread and writes results on its own thread;
what sits in between (HTML to Markdown, normalise + hash, packing the snapshot,
and for a changed page the unified diff, its AST and the side-by-side HTML) is
CPU-bound Python that the GIL would serialise with the database writes. Here it
runs in a small persistent pool of processes, CHECK_CPU_WORKERS of them, so
several pages are extracted at once while the runner's thread writes.

Nothing in this module touches Django, the database or the network: arguments
and results are plain picklable data (bytes, str, dicts, tuples).

The pool uses the "forkserver" start method (spawn where there is none): its
processes descend from a fresh interpreter, never from the worker that asks for
them, so they inherit no database connection, no fetcher thread and no lock held
by one. In a Celery prefork child (daemonic, which multiprocessing refuses
children to) the pool is started with that flag lifted for the moment, because
its processes cannot outlive the child (see _main_hidden). When a pool cannot
be started at all, callers get None and run the work inline, with a warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
import zlib
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import AuthenticationString
from typing import Any

from checks.diff import content_hash, diff_with_side_by_side

logger = logging.getLogger(__name__)

# Snapshots are compressed once and read rarely (diffs, the dashboard): speed
# over ratio. zlib.decompress reads every level, so older rows stay readable.
SNAPSHOT_COMPRESSION_LEVEL = 1
# How long a new pool may take to answer its first task (fresh interpreters
# importing lexbor and html-to-markdown).
START_TIMEOUT_SECONDS = 60.0


# --- The work (runs in a pool process, or inline) --------------------------------


def pack_snapshot(text: str, *, unless: str | None = None) -> tuple[str, bytes, int]:
    """(content hash, compressed bytes, size) of a Snapshot row for `text`; the
    bytes are left empty when the hash is `unless` (that row exists already)."""
    raw = text.encode()
    digest = hashlib.sha256(raw).hexdigest()
    if digest == unless:
        return digest, b"", len(raw)
    return digest, zlib.compress(raw, SNAPSHOT_COMPRESSION_LEVEL), len(raw)


def analyse(
    body: bytes,
    content_type: str,
    url: str,
    options: Mapping[str, Any],
    baseline_hash: str | None,
    baseline_snapshot: str | None = None,
) -> dict[str, Any]:
    """Extract a fetched body and hash it against the baseline's hashes (its
    normalised hash, and its snapshot's content hash).

    {"error": message} when the body has no comparable text; otherwise
    {"metadata", "hash", "snapshot", "markdown"}, where "markdown" is only sent
    back when the page changed (the diff needs it), None otherwise, and the
    snapshot's bytes are empty when it is the baseline's snapshot itself.
    """
    from checks.extract import ExtractionError, extract

    try:
        extracted = extract(
            body, content_type=content_type, url=url, options=options
        )  # fmt: skip
    except ExtractionError as exc:
        return {"error": exc.message}
    markdown = extracted.markdown
    digest = content_hash(markdown)
    changed = baseline_hash is not None and baseline_hash != digest
    return {
        "metadata": {k: v for k, v in extracted.metadata.items() if v is not None},
        "hash": digest,
        "snapshot": pack_snapshot(markdown, unless=baseline_snapshot),
        "markdown": markdown if changed else None,
    }


def diff(previous: bytes, current: str) -> tuple[dict[str, Any] | None, str]:
    """A changed page's `diff` (text + AST) and side-by-side HTML, against the
    baseline's snapshot data as stored (compressed)."""
    return diff_with_side_by_side(zlib.decompress(previous).decode(), current)


def _ping() -> int:
    return os.getpid()


# --- The pool -----------------------------------------------------------------------


def _watch_parent(parent: int) -> None:
    # ProcessPoolExecutor's processes wait on a queue whose write end they hold
    # themselves, so they would outlive a worker killed by its hard time limit.
    # With forkserver our parent is the fork server, which exits when the worker
    # does: a changed parent pid means the pool's owner is gone.
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(0)


def _init_worker() -> None:
    # Ctrl-C and `celery worker` shutdowns signal the whole process group: the
    # pool's owner decides when its processes end, not the terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_watch_parent, args=(os.getppid(),), name="parent-watch", daemon=True
    ).start()


class _PoolState:
    executor: ProcessPoolExecutor | None = None
    workers = 0
    owner_pid = 0
    failed_at: float | None = None


_state = _PoolState()
_lock = threading.Lock()
# After a pool failed to start, run inline for this long before trying again.
RETRY_START_AFTER_SECONDS = 300.0


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start processes as a plain parent without the caller's __main__.

    * A spawned or forkserver process re-imports the parent's main script
      (whatever started this worker: celery, pytest, a management command, a
      script without a __main__ guard); pool processes only need importable
      functions of this module.
    * A Celery prefork child is marked daemonic (and carries billiard's
      authkey type), and multiprocessing refuses
      children to daemonic processes, because they could be orphaned when it
      is killed. Ours cannot: the fork server exits with its parent, and each
      pool process exits when its parent does (_watch_parent).
    """
    main = sys.modules.get("__main__")
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
    saved = dict(config)
    config.pop("daemon", None)
    # billiard swaps in its own AuthenticationString, which the stdlib will not
    # pickle for its children: hand them the same key as the stdlib's type.
    config["authkey"] = AuthenticationString(bytes(saved["authkey"]))
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
        config.clear()
        config.update(saved)


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # Imported once by the fork server, then shared by every pool process.
        context.set_forkserver_preload(["checks.analysis", "checks.extract"])
        return context
    return multiprocessing.get_context("spawn")


def pool(workers: int) -> ProcessPoolExecutor | None:
    """The process pool of this process, started on first use; None means
    "run inline": `workers` is 0 or 1, or no pool could be started here (a
    warning says why; another attempt is made after a while)."""
    if workers <= 1:
        return None
    with _lock:
        if _state.executor is not None and getattr(_state.executor, "_broken", False):
            _discard(wait=_state.owner_pid == os.getpid())  # a process died
        if _state.executor is not None:
            if _state.owner_pid == os.getpid() and _state.workers == workers:
                return _state.executor
            _discard(wait=_state.owner_pid == os.getpid())
        if (
            _state.failed_at is not None
            and time.monotonic() - _state.failed_at < RETRY_START_AFTER_SECONDS
        ):
            return None
        executor = None
        try:
            executor = ProcessPoolExecutor(
                max_workers=workers, mp_context=_context(), initializer=_init_worker
            )
            # Start every process now (each submit before the first answer adds
            # one), and find out here whether this process may have children.
            with _main_hidden():
                pings = [executor.submit(_ping) for _ in range(workers)]
            for ping in pings:
                ping.result(timeout=START_TIMEOUT_SECONDS)
        except Exception as exc:
            logger.warning(
                "Could not start a pool of %s processes for page analysis (%s: %s);"
                " pages are analysed inline in the worker instead.",
                workers, type(exc).__name__, exc,
            )  # fmt: skip
            if executor is not None:
                executor.shutdown(wait=False, cancel_futures=True)
            _state.failed_at = time.monotonic()
            return None
        logger.info(
            "Started %s processes for page analysis (%s)",
            workers, executor._mp_context.get_start_method(),
        )  # fmt: skip
        _state.executor, _state.workers = executor, workers
        _state.owner_pid, _state.failed_at = os.getpid(), None
        return executor


def _discard(*, wait: bool) -> None:
    executor, _state.executor = _state.executor, None
    if executor is None:
        return
    if not wait:
        return  # inherited through fork: the processes belong to our parent
    # Kill rather than wait: a process may be stuck on a pathological page.
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.kill()


def reset() -> None:
    """Stop this process's pool (its processes are killed); the next pool()
    call starts a new one. Used after a check left work running in it."""
    with _lock:
        _discard(wait=_state.owner_pid == os.getpid())
