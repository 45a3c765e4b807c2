"""Until SMTP is set up, every e-mail is written to the log as readable text:
one record, the plain part decoded, links whole on their own lines."""

from __future__ import annotations

import logging
import os

from django.core.mail import EmailMultiAlternatives

from config.mail import EmailBackend

LINK = "https://pagewatch.example.org/email/confirm/" + "a1b2c3d4" * 12 + "/"


def test_a_confirmation_link_comes_out_whole_and_readable(caplog):
    message = EmailMultiAlternatives(
        "Confirm your e-mail for “Prices”",
        f"Please confirm that you want these e-mails:\n\n{LINK}\n\nThanks — Pagewatch",
        "pagewatch@localhost",
        ["mia@acme.test"],
    )
    message.attach_alternative(f"<p><a href='{LINK}'>Confirm</a></p>", "text/html")

    with caplog.at_level(logging.INFO, logger="pagewatch.mail"):
        sent = EmailBackend().send_messages([message])

    [record] = caplog.records
    text = record.getMessage()
    assert sent == 1
    assert f"\n{LINK}\n" in text
    assert "Subject: Confirm your e-mail for “Prices”" in text
    assert "mia@acme.test" in text
    assert "=\n" not in text and "=3D" not in text and "<p>" not in text


def test_it_is_the_default_backend():
    import config.settings as configured

    if "EMAIL_BACKEND" not in os.environ:
        assert configured._EMAIL_BACKEND == "config.mail.EmailBackend"
