"""The embedded broker: Celery's messages as files under var/broker, so that
`make run` needs no server (no REDIS_URL). Settings select it with the URL
`pagewatch-files://` and the option `folder`.

It is kombu's filesystem transport made safe for several processes at once:

- **Writes are atomic.** A message is written under a temporary name in
  `tmp/` and renamed into `in/` once complete. kombu creates the file first
  and writes it afterwards, so a consumer could take it empty, fail to decode
  it and stop the worker, and the message was lost.
- **A message is taken by exactly one consumer** and kept until its task is
  acknowledged: taking it is a rename from `in/` into a folder of the
  consuming process (`claimed/<pid>-<start time>/`, on the same file system,
  so exactly one rename wins); the acknowledgement deletes it. The messages of
  a process that died are put back into `in/` by any consumer that notices,
  so acks_late and reject_on_worker_lost mean with this broker what they mean
  with Redis: a task whose worker died is delivered again (once the worker
  is back, rather than after Redis' visibility timeout).
- **The worker polls it from Celery's event loop** (the transport says it is
  asynchronous and registers a timer). For a transport that is not, Celery
  falls back to a blocking loop and a pool whose processes share one queue
  lock; a pool process killed while holding it left the worker alive but
  taking no work, for good. On the event loop the worker runs the same pool as
  with Redis, which replaces a lost process and carries on.

Messages survive a crash of any process, not a power cut (no fsync): this is
the broker of a single machine's `make run`; production uses Redis.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections import deque
from pathlib import Path
from queue import Empty
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

SCHEME = "pagewatch-files"
# Messages a worker takes per look at the folder before its event loop does
# anything else (the prefetch limit usually stops it sooner).
DRAIN_PER_POLL = 100
# How often a consumer looks for messages held by processes that died (when
# its queue looks empty).
RECOVER_EVERY_SECONDS = 5.0
# A message being written this long ago was abandoned by its producer.
ABANDONED_WRITE_SECONDS = 3600
_STATES: dict[str, virtual.BrokerState] = {}


def _process_id(pid: int) -> str | None:
    """`<pid>-<start time>`: names a process for as long as it lives, even
    once its pid is reused; None when no such process runs (Linux: /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc: the pid alone, alive or not
        return _pid_alone(pid)
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None  # exited, not yet reaped
    return f"{pid}-{fields[19]}"  # starttime, proc(5) field 22


def _pid_alone(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return f"{pid}-0"


def _alive(owner: str) -> bool:
    pid, _, _ = owner.partition("-")
    return pid.isdigit() and _process_id(int(pid)) == owner


def recover_orphans(folder: Path) -> int:
    """Put back into the queue the messages claimed by processes that are no
    longer running; returns how many. Any process may call it at any time:
    each file is moved by one rename, which only one caller can win."""
    root, inbox = folder / "claimed", folder / "in"
    recovered = 0
    for owner in os.listdir(root):
        if _alive(owner):
            continue
        for name in os.listdir(root / owner):
            try:
                os.rename(root / owner / name, inbox / name)
            except FileNotFoundError:
                continue  # another consumer put it back first
            recovered += 1
        with contextlib.suppress(OSError):  # not empty yet, or gone: next time
            (root / owner).rmdir()
    if recovered:
        logger.warning("Put back %d message(s) held by a process that died", recovered)
    _delete_abandoned_writes(folder / "tmp")
    return recovered


def _delete_abandoned_writes(tmp: Path) -> None:
    """Half-written messages of producers that died mid-write (never seen by
    a consumer: they were not renamed into the queue)."""
    too_old = time.time() - ABANDONED_WRITE_SECONDS
    for path in tmp.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < too_old:
                path.unlink()


class Channel(filesystem.Channel):
    """One process's view of the folder: puts atomically, claims what it
    takes, deletes a message when it is acknowledged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._claims: dict[str, Path] = {}  # delivery tag -> claimed file
        self._queues_without_acks: set[str] = set()
        self._listed: dict[str, deque[str]] = {}  # queue -> names seen, oldest first
        self._owner: tuple[int, str] | None = None
        self._recovered_at = -RECOVER_EVERY_SECONDS

    # --- Folders --------------------------------------------------------------

    @property
    def folder(self) -> Path:
        return Path(self.transport_options["folder"])

    @property
    def data_folder_in(self) -> str:  # read by kombu's _size and _purge
        return str(self.folder / "in")

    @property
    def data_folder_out(self) -> str:
        return self.data_folder_in

    @property
    def control_folder(self) -> Path:
        return self.folder / "control"

    def _claimed_folder(self) -> Path:
        """This process's claims; created once per process (a forked child
        gets its own)."""
        pid = os.getpid()
        if self._owner is None or self._owner[0] != pid:
            self._owner = (pid, _process_id(pid) or f"{pid}-0")
            (self.folder / "claimed" / self._owner[1]).mkdir(
                parents=True, exist_ok=True
            )
        return self.folder / "claimed" / self._owner[1]

    # --- Put and get ----------------------------------------------------------

    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:
        # Named by wall-clock time (fixed width, so names sort in order) for
        # first-in first-out; kombu's _size and _purge read `<stamp>.<queue>.msg`.
        name = f"{time.time_ns():020d}_{uuid.uuid4().hex}.{queue}.msg"
        temporary = self.folder / "tmp" / name
        temporary.write_bytes(str_to_bytes(dumps(payload)))
        os.replace(temporary, Path(self.data_folder_in) / name)

    def _get(self, queue: str) -> dict[str, Any]:
        listed = self._listed.get(queue)
        if not listed:
            self._recover_now_and_then()
            listed = self._listed[queue] = self._list(queue)
        inbox, claimed = Path(self.data_folder_in), self._claimed_folder()
        while listed:
            name = listed.popleft()
            try:
                os.rename(inbox / name, claimed / name)
            except FileNotFoundError:
                continue  # another consumer took it first
            payload = self._read(claimed / name)
            if payload is None:
                continue
            if queue in self._queues_without_acks:
                (claimed / name).unlink()
            else:
                self._claims[payload["properties"]["delivery_tag"]] = claimed / name
            return payload
        raise Empty()

    def _recover_now_and_then(self) -> None:
        now = time.monotonic()
        if now - self._recovered_at >= RECOVER_EVERY_SECONDS:
            self._recovered_at = now
            recover_orphans(self.folder)

    def _list(self, queue: str) -> deque[str]:
        """The queue's messages, oldest first. Taken from this listing until it
        runs out, so a long queue costs one directory listing per listing's
        worth of messages, not one per message."""
        wanted = f"{queue}.msg"
        names = os.listdir(self.data_folder_in)
        return deque(sorted(n for n in names if n.partition(".")[2] == wanted))

    def _read(self, path: Path) -> dict[str, Any] | None:
        """The message in `path`; a file that is not one (left by another
        program, or by kombu's own transport before this one) is set aside
        with a warning instead of stopping the worker."""
        raw = path.read_bytes()
        try:
            payload = loads(bytes_to_str(raw))
            payload["properties"]["delivery_tag"]  # noqa: B018 - must exist
        except (ValueError, TypeError, KeyError):
            rejected = self.folder / "rejected"
            rejected.mkdir(exist_ok=True)
            os.replace(path, rejected / path.name)
            logger.warning("Set aside %s: not a readable message", path.name)
            return None
        return payload

    # --- Acknowledgements -----------------------------------------------------

    def basic_consume(self, queue: str, no_ack: bool, *args: Any, **kwargs: Any):
        # Control and event queues are consumed without acknowledgements:
        # their messages are deleted as they are taken.
        if no_ack:
            self._queues_without_acks.add(queue)
        else:
            self._queues_without_acks.discard(queue)
        return super().basic_consume(queue, no_ack, *args, **kwargs)

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any):
        message = super().basic_get(queue, no_ack, **kwargs)
        if message is not None and no_ack:
            self._release(message.delivery_tag)
        return message

    def basic_ack(self, delivery_tag: str, multiple: bool = False) -> None:
        super().basic_ack(delivery_tag, multiple)
        self._release(delivery_tag)

    def basic_reject(self, delivery_tag: str, requeue: bool = False) -> None:
        super().basic_reject(delivery_tag, requeue)  # requeue: _restore below
        self._release(delivery_tag)

    def _restore(self, message: Any) -> None:
        # Rejected with requeue, or unacknowledged at a clean shutdown: kombu
        # puts a copy back into the queue; the claimed file then goes.
        super()._restore(message)
        self._release(message.delivery_tag)

    def _release(self, delivery_tag: str) -> None:
        path = self._claims.pop(delivery_tag, None)
        if path is not None:
            path.unlink(missing_ok=True)


class Transport(filesystem.Transport):
    """Drained from Celery's event loop every polling_interval seconds."""

    Channel = Channel
    implements = filesystem.Transport.implements.extend(asynchronous=True)

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        self.folder = Path(client.transport_options["folder"])
        # What this process has declared, shared by its connections to one
        # folder (kombu shares one state for every folder: a queue bound in
        # one folder would then be taken as bound in another, and messages
        # sent there dropped for want of a route).
        self.state = _STATES.setdefault(str(self.folder), virtual.BrokerState())
        for sub in ("in", "tmp", "claimed", "control"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)

    def register_with_event_loop(self, connection: Any, loop: Any) -> None:
        loop.call_repeatedly(self.polling_interval, self._drain, connection)

    def _drain(self, connection: Any) -> None:
        for _ in range(DRAIN_PER_POLL):
            try:
                self.drain_events(connection, timeout=0)
            except TimeoutError:  # nothing (more) to take
                return


# The URL scheme settings use; kombu looks transports up by scheme here.
TRANSPORT_ALIASES[SCHEME] = f"{__name__}:Transport"
