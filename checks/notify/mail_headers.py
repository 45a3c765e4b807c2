"""The headers a careful sender gives each e-mail, beside the unsubscribe ones
(checks.notify.consent): a Message-ID on the domain the mail is sent from, a
thread per monitor and a List-Id per list.

- Message-ID: Django's names the machine that sent it (a container's random
  host name), which spam filters hold against a sender. Ours is on the From
  address's domain and stays the same for every attempt of one e-mail, so a
  copy sent again after a lost answer (see kinds/team_email) is one message
  to mail clients that drop duplicates.
- References / In-Reply-To: a monitor's change e-mails name one thread, its
  failing and working-again e-mails another, a channel's digests a third.
  The thread's first message is never sent (GitHub's notifications do the
  same): clients that thread by References (Apple Mail, Thunderbird, Outlook
  on the web) put the e-mails of one monitor together and never two
  monitors'.
- List-Id (RFC 2919): what a mail rule or a "filter messages like these"
  keys on, per monitor for its own e-mail and per channel for a channel's.

Thread and list identifiers are this install's alone: a monitor's is its
UUID; a channel's number, which another install (staging beside production
on one From domain, a reinstall, two installs on the default localhost) gives
its own channels too, carries a short value of this install's SECRET_KEY.
"""

from __future__ import annotations

import hashlib
import re
from email.utils import parseaddr
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.crypto import salted_hmac

from checks.notify.consent import OneLineHeader
from checks.notify.texts import one_line

LIST_NAME_CHARS = 60
# A List-Id's words are a phrase: letters, digits and a few marks; anything
# else (quotes, brackets, "@", emoji) would need quoting or end the phrase.
_NOT_PHRASE = re.compile(r"[^\w .'-]+")


def mail_domain() -> str:
    """The domain Pagewatch's mail comes from: DEFAULT_FROM_EMAIL's, else
    PUBLIC_BASE_URL's host."""
    address = parseaddr(settings.DEFAULT_FROM_EMAIL)[1]
    domain = address.rpartition("@")[2].strip().lower()
    if not domain:
        domain = urlsplit(settings.PUBLIC_BASE_URL).hostname or "localhost"
    return domain.encode("idna").decode("ascii") if not domain.isascii() else domain


def of_this_install(key: Any) -> str:
    """`key` (a row's number) made this install's own, the same for as long
    as its SECRET_KEY is."""
    install = salted_hmac("mail_headers.install", "", algorithm="sha256")
    return f"{key}-{install.hexdigest()[:10]}"


def message_id(delivery_key: Any, address: str) -> dict[str, str]:
    """A Message-ID for one e-mail of a delivery: the same at every attempt,
    different for every address. This header and the thread's and list's
    are each one line (OneLineHeader): an identifier longer than a folded
    line would be sent as an RFC 2047 encoded word, which clients do not
    read as an identifier."""
    to = hashlib.sha256(address.strip().lower().encode()).hexdigest()[:16]
    return {
        "Message-ID": OneLineHeader(
            "Message-ID", f"<{delivery_key}.{to}@{mail_domain()}>"
        )
    }


def thread_root(kind: str, key: Any) -> str:
    """The Message-ID of a thread's (unsent) first message."""
    return f"<{kind}.{key}@{mail_domain()}>"


def in_thread(root: str) -> dict[str, str]:
    return {
        "In-Reply-To": OneLineHeader("In-Reply-To", root),
        "References": OneLineHeader("References", root),
    }


def list_id(name: str, kind: str, key: Any) -> dict[str, str]:
    """List-Id: the list's name in words, then its identifier."""
    words = " ".join(_NOT_PHRASE.sub(" ", one_line(name, LIST_NAME_CHARS)).split())
    ident = f"<{key}.{kind}.{mail_domain()}>"
    value = f"{words} {ident}" if words else ident
    return {"List-Id": OneLineHeader("List-Id", value) if value.isascii() else value}
