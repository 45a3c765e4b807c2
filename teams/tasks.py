"""The teams app's Celery task: the password-reset e-mail, sent by a worker
so the web request costs the same whether or not an account has the address
(teams.emails.queue_password_reset)."""

from __future__ import annotations

from celery import shared_task

from teams import emails

# One SMTP conversation (its 30 s time-out) and the lookup. Not retried: a
# second attempt could send a second link; the person can simply ask again.
RESET_TIME_LIMIT = 60


@shared_task(
    name=emails.PASSWORD_RESET_TASK,
    time_limit=RESET_TIME_LIMIT,
    soft_time_limit=RESET_TIME_LIMIT - 15,
    ignore_result=True,
)
def send_password_reset_task(email: str) -> int:
    return emails.send_password_reset(email)
