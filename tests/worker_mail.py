"""A task that sends one e-mail, for a real worker started with
`-I tests.worker_mail` (tests/test_settings.py): the worker's printed output,
as make run's e-mail backend writes it (config.mail)."""

from __future__ import annotations

from celery import shared_task
from django.core.mail import send_mail

SEND_ONE = "tests.worker_mail.send_one"


@shared_task(name=SEND_ONE, time_limit=30)
def send_one(subject: str) -> None:
    send_mail(subject, "The body of the message.", None, ["someone@example.com"])
