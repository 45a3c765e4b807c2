"""What config.logs keeps out of the log: the credentials public addresses
carry, and only those."""

from __future__ import annotations

import io
import logging
import subprocess
import sys

import pytest

from config.logs import MAILBOX, OutageInOneLine, WithoutCredentials, hidden

TOKEN = "a1b2c3d4" * 6


@pytest.mark.parametrize(
    ("line", "masked"),
    [
        (
            f'"GET /invitations/{TOKEN}/ HTTP/1.1" 200',
            '"GET /invitations/[hidden]/ HTTP/1.1" 200',
        ),
        (
            f"Not Found: /feeds/teams/{TOKEN}/",
            "Not Found: /feeds/teams/[hidden]/",
        ),
        (
            f"https://pagewatch.example.org/email/confirm/{TOKEN}/",
            "https://pagewatch.example.org/email/confirm/[hidden]/",
        ),
        (f"/captures/{TOKEN}", "/captures/[hidden]"),
        (
            f"/accounts/reset/MQ/{TOKEN}/",
            "/accounts/reset/MQ/[hidden]/",
        ),
        (
            f"/accounts/login/?next=/invitations/{TOKEN}/",
            "/accounts/login/?next=/invitations/[hidden]/",
        ),
        (
            f"/accounts/sso/callback/?code={TOKEN}&state=s1",
            "/accounts/sso/callback/?code=[hidden]&state=s1",
        ),
    ],
)
def test_a_public_address_loses_its_credential(line: str, masked: str) -> None:
    assert hidden(line) == masked


@pytest.mark.parametrize(
    "line",
    [
        '"POST /settings/team/invitations/12/revoke/ HTTP/1.1" 302',
        "https://pagewatch.example.org/settings/team/invitations/12/renew/",
        "/settings/team/feeds/",
        "/accounts/reset/MQ/set-password/",
    ],
)
def test_a_dashboard_address_stays_readable(line: str) -> None:
    assert hidden(line) == line


@pytest.fixture
def written() -> io.StringIO:
    """What a handler with the filter (as settings.LOGGING sets the console
    up) writes, for records of the mailbox and of any other logger."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(WithoutCredentials())
    loggers = [logging.getLogger(MAILBOX), logging.getLogger("pagewatch.tests")]
    for logger in loggers:
        logger.addHandler(handler)
    yield out
    for logger in loggers:
        logger.removeHandler(handler)


def test_the_console_mailbox_keeps_its_links_and_other_logs_do_not(
    written: io.StringIO,
) -> None:
    link = f"https://pagewatch.example.org/email/confirm/{TOKEN}/"

    logging.getLogger(MAILBOX).warning("Confirm:\n%s", link)
    logging.getLogger("pagewatch.tests").warning("Opened %s", link)

    assert written.getvalue().splitlines() == [
        "Confirm:",
        link,
        "Opened https://pagewatch.example.org/email/confirm/[hidden]/",
    ]


def test_reading_the_log_settings_loads_no_database_or_broker_code():
    # gunicorn's master imports config.logs for its masking; it serves no
    # request, so Django's database layer, redis and kombu would be memory
    # it holds for nothing.
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, config.logs; "
            "print(sorted(m for m in ('django.db', 'redis', 'kombu') "
            "if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert loaded == "[]"


def test_an_outage_line_passes_a_second_copy_of_its_filter():
    # Each django.setup() in a process (config.wsgi after the test runner's)
    # adds another copy of the filter to django.request.
    from django.db import OperationalError

    try:
        raise OperationalError("connection failed: connection to server refused")
    except OperationalError:
        record = logging.LogRecord(
            "django.request", logging.ERROR, __file__, 1,
            "Service Unavailable: %s", ("/",), sys.exc_info(),
        )  # fmt: skip
    record.status_code = 503

    first, second = OutageInOneLine(), OutageInOneLine()

    assert first.filter(record) and second.filter(record)
    assert record.levelname == "WARNING" and record.exc_info is None
    assert record.getMessage() == (
        "Service Unavailable: /: the database is not reachable: "
        "connection failed: connection to server refused"
    )
