"""Password resets as the web queues them and a worker sends them: the
request only hands the address over (teams.emails.queue_password_reset),
which the `queued_resets` fixture (tests/conftest.py) collects instead."""

from __future__ import annotations

from django.core import mail

from teams.tasks import send_password_reset_task


def worker_sends(queued: list[str]) -> list:
    """The worker takes the queued resets: the e-mails that leave."""
    while queued:
        send_password_reset_task(queued.pop(0))
    return mail.outbox
