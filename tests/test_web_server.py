"""gunicorn as `make run` and production start it (config/gunicorn.py): what
its access log writes, and which request headers it believes."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.urls import URLPattern, URLResolver, get_resolver

ROOT = Path(__file__).resolve().parents[1]


def routes(patterns: list, prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def addresses_with_a_token() -> list[str]:
    """Every route whose address carries a credential (a parameter named
    token), filled in: feeds, e-mail links, invitations, password resets,
    screenshot links. A new one is covered without a change here."""
    filled = []
    for number, route in enumerate(routes(get_resolver().url_patterns)):
        if "token>" not in route:
            continue
        path = re.sub(r"<(?:\w+:)?token>", f"Secret{number}Token", route)
        filled.append("/" + re.sub(r"<(?:\w+:)?\w+>", "MQ", path))
    return filled


class Web:
    def __init__(self, var_dir: Path, log_dir: Path, **env: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.access_log = log_dir / "access.log"
        self.error_log = log_dir / "error.log"
        environment = {
            k: v
            for k, v in os.environ.items()
            if k not in ("TRUST_PROXY_HEADERS", "FORWARDED_ALLOW_IPS", "HSTS_SECONDS")
            and k != "DATABASE_URL"
        }
        with self.access_log.open("wb") as out, self.error_log.open("wb") as err:
            self.process = subprocess.Popen(  # noqa: S603
                [sys.executable, "-m", "gunicorn", "config.wsgi"]
                + ["--config", "python:config.gunicorn"]
                + ["--bind", f"127.0.0.1:{port}"],
                cwd=ROOT,
                env=environment
                | {"PAGEWATCH_VAR_DIR": str(var_dir), "WEB_WORKERS": "1"}
                | env,
                stdout=out,
                stderr=err,
            )
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.error_log.read_text()
            try:
                httpx.get(self.url + "/favicon.ico", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "gunicorn did not answer"
                time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)

    def logged(self, count: int) -> str:
        """The access log once it holds `count` more lines than at start."""
        deadline = time.monotonic() + 10
        while len(self.access_log.read_text().splitlines()) < count + 1:
            assert time.monotonic() < deadline, self.access_log.read_text()
            time.sleep(0.05)
        return self.access_log.read_text()


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite database, so the pages answer as they would."""
    path = tmp_path_factory.mktemp("var")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
            "PAGEWATCH_VAR_DIR": str(path),
        },
        check=True,
        timeout=120,
    )
    return path


@pytest.fixture
def start_web(var_dir: Path, tmp_path: Path) -> Iterator:
    started: list[Web] = []

    def start(**env: str) -> Web:
        started.append(Web(var_dir, tmp_path, **env))
        return started[-1]

    yield start
    for web in started:
        web.stop()


def test_the_logs_leave_out_the_credentials_that_addresses_carry(
    start_web,
) -> None:
    web = start_web()
    paths = addresses_with_a_token()
    assert any(path.startswith("/feeds/teams/") for path in paths)
    assert any(path.startswith("/accounts/reset/") for path in paths)
    assert len(paths) >= 8

    for path in paths:
        httpx.get(web.url + path, headers={"Referer": web.url + path})
    httpx.get(web.url + "/accounts/sso/callback/?code=SecretCode&state=s1")
    log = web.logged(len(paths) + 1)

    errors = web.error_log.read_text()

    assert "Secret" not in log
    assert '"GET /feeds/teams/[hidden]/ HTTP/1.1"' in log
    assert f'"{web.url}/email/channel/[hidden]/one-click/"' in log
    assert '"GET /accounts/sso/callback/?code=[hidden]&state=s1 HTTP/1.1"' in log
    assert "Secret" not in errors
    assert "Not Found: /feeds/teams/[hidden]/" in errors


def test_without_trust_proxy_headers_gunicorn_believes_no_forwarded_scheme(
    start_web,
) -> None:
    """From 127.0.0.1 gunicorn believed X-Forwarded-Proto by default, so a
    client behind a proxy that passes the header on could make Django think
    the request was https and send HSTS, which browsers keep for its age."""
    web = start_web(TRUST_PROXY_HEADERS="false", HSTS_SECONDS="60")

    answer = httpx.get(
        web.url + "/accounts/login/", headers={"X-Forwarded-Proto": "https"}
    )

    assert answer.status_code == 200
    assert "Strict-Transport-Security" not in answer.headers


def test_with_trust_proxy_headers_the_proxys_forwarded_scheme_is_believed(
    start_web,
) -> None:
    web = start_web(TRUST_PROXY_HEADERS="true", HSTS_SECONDS="60")

    answer = httpx.get(
        web.url + "/accounts/login/", headers={"X-Forwarded-Proto": "https"}
    )
    plain = httpx.get(web.url + "/accounts/login/")

    assert answer.headers["Strict-Transport-Security"] == "max-age=60"
    assert "Strict-Transport-Security" not in plain.headers


def test_gunicorns_error_log_and_query_string_leave_out_credentials(
    tmp_path: Path,
) -> None:
    """The error log names a failed request's address whole ("Error
    handling request /feeds/teams/…"), and the %(q)s atom is the query
    without its "?", so a leading code=… is masked there too."""
    from datetime import timedelta
    from types import SimpleNamespace

    from gunicorn.config import Config

    from config.gunicorn import AccessLogWithoutCredentials

    config = Config()
    config.set("errorlog", str(tmp_path / "error.log"))
    config.set("accesslog", str(tmp_path / "access.log"))
    config.set("access_log_format", "%(q)s")
    logger = AccessLogWithoutCredentials(config)
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/accounts/sso/callback/?code=SecretCode&state=s1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "QUERY_STRING": "code=SecretCode&state=s1",
    }
    response = SimpleNamespace(status="200 OK", headers=[], sent=0)

    try:
        logger.exception("Error handling request %s", "/feeds/teams/SecretToken/")
        logger.access(response, [], environ, timedelta(0))
    finally:
        for handler in logger.error_log.handlers + logger.access_log.handlers:
            handler.close()
        logger.error_log.handlers.clear()
        logger.access_log.handlers.clear()

    errors = (tmp_path / "error.log").read_text()
    assert "Error handling request /feeds/teams/[hidden]/" in errors
    assert "Secret" not in errors
    assert (tmp_path / "access.log").read_text() == "code=[hidden]&state=s1\n"
