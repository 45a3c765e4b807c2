"""The pure CPU work of a check, and the process pool that runs it.

checks.runner fetches pages in a thread and writes results on its own thread;
what sits in between (extraction, hashing and packing the snapshot, and for a
page whose source changed the Markdown of both versions, the unified diff, its
AST and the side-by-side HTML) is CPU-bound Python that the GIL would serialise
with the database writes. Here it runs in a small persistent pool of
processes, CHECK_CPU_WORKERS of them, so several pages are extracted at once
while the runner's thread writes.

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
import ctypes
import gc
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.process import AuthenticationString
from typing import Any

from checks.content import compare_texts, content_hash, pack_snapshot, unpack

logger = logging.getLogger(__name__)

# How long a new pool may take to answer its first task (fresh interpreters
# importing lexbor and html-to-markdown).
START_TIMEOUT_SECONDS = 60.0


# --- The work (runs in a pool process, or inline) --------------------------------


def analyse(
    body: bytes,
    content_type: str,
    url: str,
    options: Mapping[str, Any],
    baseline_snapshot: str | None,
) -> dict[str, Any]:
    """Extract a fetched (decoded) body into its source (checks.extract) and
    compare its hash with the baseline snapshot's, `baseline_snapshot` (None:
    no baseline).

    {"error": message} when the body has no comparable text; otherwise
    {"metadata", "snapshot", "source"}: with no baseline, "snapshot" is the
    packed new snapshot; when the source is the baseline's, "snapshot" holds its
    hash only (empty bytes); when it differs, "snapshot" is None and "source"
    is (format, text) for reconcile() to convert and compare.
    """
    from checks.content import ExtractionError, extract

    try:
        extracted = extract(
            body, content_type=content_type, url=url, options=options
        )  # fmt: skip
    except ExtractionError as exc:
        return {"error": exc.message}
    source, source_format = extracted.source, extracted.source_format
    metadata = {k: v for k, v in extracted.metadata.items() if v is not None}
    # Hashed once: the bytes stay empty when the source is the baseline's. A
    # changed source's bytes go unused (reconcile() packs it again), a small
    # waste next to converting and diffing it.
    pack = pack_snapshot(source, source_format, unless=baseline_snapshot)
    if baseline_snapshot is not None and pack[0] != baseline_snapshot:
        return {
            "metadata": metadata,
            "snapshot": None,
            "source": (source_format, source),
        }
    return {"metadata": metadata, "snapshot": pack, "source": None}


def reconcile(
    previous: bytes,
    previous_format: str,
    current: str,
    current_format: str,
    previous_hash: str = "",
) -> dict[str, Any]:
    """Compare a page whose source differs from its baseline's: both are
    converted to Markdown, and the page is the same when the normalised
    Markdown is (checks.diff.normalize), changed otherwise.

    `previous_hash` is the baseline's normalised Markdown hash when an earlier
    check stored one (PageState.normalized_hash). When the current Markdown
    has that hash the page is the same without converting the baseline at all:
    a page whose markup keeps changing while its text does not (per-request
    ids and nonces, rotated class names) costs one conversion, not two and a
    diff, on every check.

    {"status": "same" | "changed", "hash": normalised Markdown hash,
    "snapshot": pack or None, "diff", "diff_html"}. A same page keeps its
    baseline (no snapshot: an unchanged page costs no storage), unless the
    baseline was stored in an older format, which is then replaced once.
    A changed page's diff is rendered here as well.
    """
    from checks.content import ExtractionError, markdown_of

    try:
        after = markdown_of(current_format, current)
    except ExtractionError as exc:
        return {"error": exc.message}
    if previous_hash and content_hash(after) == previous_hash:
        return _same(previous_hash, previous_format, current, current_format)
    try:
        before = markdown_of(previous_format, unpack(previous))
    except (ExtractionError, ValueError):
        before = ""  # an unreadable baseline: report the page in full as changed
    before_hash, digest, diff, diff_html = compare_texts(before, after)
    if before_hash == digest:
        return _same(digest, previous_format, current, current_format)
    return {
        "status": "changed",
        "hash": digest,
        "diff": diff,
        "diff_html": diff_html,
        "snapshot": pack_snapshot(current, current_format),
    }


def _same(
    digest: str, previous_format: str, current: str, current_format: str
) -> dict[str, Any]:
    # The baseline is kept unless it was stored in another format: replaced once.
    same_format = previous_format == current_format
    return {
        "status": "same",
        "hash": digest,
        "diff": None,
        "diff_html": "",
        "snapshot": None if same_format else pack_snapshot(current, current_format),
    }


def _ping() -> int:
    return os.getpid()


# --- The pool -----------------------------------------------------------------------


_PROC = os.path.exists("/proc/self/stat")


def _exists(pid: int) -> bool:
    """Whether process `pid` is still running (a zombie has exited: its parent
    just has not collected it yet)."""
    if _PROC:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                state = stat.read().rsplit(b")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state != b"Z"
    try:
        os.kill(pid, 0)  # no signal: only asks whether the process is there
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _watch_owner(owner: int) -> None:
    # Nothing else ends these processes when their owner goes without shutting
    # the pool down (a worker killed by its hard time limit, a Celery pool
    # process leaving through os._exit when its worker stops): they wait on a
    # queue whose write end they hold themselves, and each holds the fork
    # server's lifeline, so the fork server waits for them in turn.
    while True:
        time.sleep(1.0)
        if not _exists(owner):
            os._exit(0)


# glibc's mallopt() parameters (malloc.h) and the values a pool process uses.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# A page's analysis grows the heap by about a megabyte (lexbor's tree, the
# decoded text, the cleaned source) and frees it all at the end. With glibc's
# defaults the freed top of the heap goes back to the kernel after every page,
# so the next page faults it in afresh: ~200 page faults a page, a third of its
# CPU time, and far more when both pool processes fault at once in a VM. A pool
# process keeps up to TRIM bytes of freed memory for its next page instead;
# blocks up to MMAP bytes come from that reusable heap, bigger ones (pages of
# several MB) are mapped and returned as usual.
KEEP_FREED_BYTES = 16 * 1024 * 1024
HEAP_BLOCKS_UP_TO = 4 * 1024 * 1024


def _keep_freed_memory() -> bool:
    """Tune glibc's malloc of this process as above; False where there is no
    glibc (musl's mallopt does nothing, macOS has none)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # TypeError: Windows' CDLL(None)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(
        mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES)
        and mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCKS_UP_TO)
    )


def _init_worker(owner: int) -> None:
    # Ctrl-C and `celery worker` shutdowns signal the whole process group: the
    # pool's owner decides when its processes end, not the terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _keep_freed_memory()
    threading.Thread(
        target=_watch_owner, args=(owner,), name="owner-watch", daemon=True
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
      is killed. Ours cannot: each pool process exits within a second of its
      owner (_watch_owner), and the fork server once no process of ours is
      left.
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
        context.set_forkserver_preload(
            ["checks.analysis", "checks.content"]
        )
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
                max_workers=workers,
                mp_context=_context(),
                initializer=_init_worker,
                initargs=(os.getpid(),),
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


def close() -> None:
    """Shut this process's pool down before the process exits. A Celery pool
    process leaves through os._exit, which skips multiprocessing's clean-up:
    without this, the pool's queues' semaphores are reported as leaked by the
    resource tracker when the worker stops. Called between tasks, so the pool
    is idle; its processes end on their own once this process is gone anyway
    (_watch_owner)."""
    with _lock:
        executor, _state.executor = _state.executor, None
        if executor is None or _state.owner_pid != os.getpid():
            return
        executor.shutdown(wait=True, cancel_futures=True)
    del executor
    gc.collect()  # the queues are in reference cycles; their finalizers unlink


def reset() -> None:
    """Stop this process's pool (its processes are killed); the next pool()
    call starts a new one. Used after a check left work running in it."""
    with _lock:
        _discard(wait=_state.owner_pid == os.getpid())
