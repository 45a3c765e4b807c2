"""Change e-mails and consent: who gets mail, what it says, and the public
confirm / unsubscribe pages (GET shows, only POST acts)."""

from __future__ import annotations

import email.policy
import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
import time_machine
from django.conf import settings
from django.test import Client
from django.urls import reverse

from checks import runner
from checks.ai.judge import not_judged as fail_open
from checks.models import Check, Delivery
from checks.notify import deliveries, emails
from monitors.models import EmailRecipient, Target
from monitors.search_provider import NOT_CONFIGURED
from teams.models import Activity
from tests.notifying import (
    Receiver,
    judged,
    make_monitor,
    markdown_diff,
    webhook_config,
)

# The shared fixtures (site, receiver, queued, scenario).
pytest_plugins = ["tests.notifying"]

pytestmark = pytest.mark.django_db

EXTERNAL = "ext@partner.test"
MEMBER = "mia@acme.test"


@pytest.fixture
def member(team, django_user_model):
    user = django_user_model.objects.create_user("mia", MEMBER)
    team.members.add(user)
    return user


def email_settings(*recipients: str, include_diffs: bool = False) -> dict:
    return {
        "enabled": True,
        "recipients": list(recipients),
        "includeDiffs": include_diffs,
    }


CHANGES = [
    ("https://example.com/same", "same"),
    ("https://example.com/noise", "changed", {"judgment": judged(False)}),
    ("https://example.com/new", "new"),
    ("https://example.com/broken", "error", {"error": "Timed out"}),
    ("https://example.com/gone", "removed"),
    (
        "https://example.com/pricing",
        "changed",
        {"judgment": judged(True), "diff": markdown_diff("$19", "$24")},
    ),
]


def path_of(url: str) -> str:
    assert url.startswith(settings.PUBLIC_BASE_URL)
    return url.removeprefix(settings.PUBLIC_BASE_URL)


def html_of(mail) -> str:
    [(content, mimetype)] = mail.alternatives
    assert mimetype == "text/html"
    return content


def test_team_members_get_a_change_mail_at_once_with_both_parts_and_headers(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(
        team,
        email=email_settings(MEMBER, include_diffs=True),
        name="Prices <b>&</b> plans",
        goal="prices",
    )
    assert monitor.email_recipients.get().status == "confirmed"
    assert mailoutbox == [] and queued == []  # no confirmation for a member

    check = scenario.run(monitor, CHANGES)
    queued.run()

    [mail] = mailoutbox
    assert mail.to == [MEMBER]
    assert mail.subject == (
        "Monitor changes detected: Prices <b>&</b> plans: 1 page changed "
        "(1 meaningful), 1 more judged unimportant, 1 new page, 1 page removed, "
        "1 page with an error"
    )
    check_url = settings.PUBLIC_BASE_URL + check.get_absolute_url()
    assert check_url in mail.body
    order = [
        mail.body.index(f"] https://example.com/{name}")
        for name in ("pricing", "new", "broken", "gone", "noise")
    ]
    assert order == sorted(order)  # meaningful first, noise last
    assert "https://example.com/same" not in mail.body
    assert "[changed (meaningful)] https://example.com/pricing" in mail.body
    assert "Error: Timed out" in mail.body
    assert "+Pro $24/mo" in mail.body and "-Pro $19/mo" in mail.body
    assert "Prices <b>&</b> plans" in mail.body  # plain text is not HTML-escaped

    html = html_of(mail)
    assert "Prices &lt;b&gt;&amp;&lt;/b&gt; plans" in html
    assert "<b>&</b>" not in html
    assert f'href="{check_url}"' in html
    # Removed and added lines carry their colours inline (clients drop <style>).
    added, removed = "background: #e6f4ea; color: #14532d;", "background: #fde8e8;"
    assert f'<span style="{added}">+Pro $24/mo</span>' in html
    assert f'<span style="{removed} color: #8a1c1c;">-Pro $19/mo</span>' in html

    recipient = monitor.email_recipients.get()
    assert (
        mail.extra_headers["List-Unsubscribe"] == f"<{emails.one_click_url(recipient)}>"
    )
    assert mail.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert emails.unsubscribe_url(recipient) in mail.body

    check.refresh_from_db()
    email_status = check.notification_status["email"]
    assert email_status["attempted"] is True and email_status["success"] is True
    assert email_status["recipients"] == [MEMBER]
    assert email_status["pendingRecipients"] == 0
    assert email_status["unsubscribedRecipients"] == 0
    assert email_status["error"] is None


def test_without_include_diffs_the_mail_has_no_diff_excerpt(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    scenario.run(monitor, CHANGES)
    queued.run()
    [mail] = mailoutbox
    assert "+Pro $24/mo" not in mail.body
    assert "+Pro $24/mo" not in html_of(mail)


def test_with_no_recipients_the_team_members_are_mailed(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings())
    scenario.run(monitor, [("https://example.com/a", "new")])
    queued.run()
    [mail] = mailoutbox
    assert mail.to == [MEMBER]
    assert monitor.email_recipients.get().source == "team"


def test_a_subject_never_carries_a_line_break(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER), name="Line\r\nBcc: x")
    scenario.run(monitor, [("https://example.com/a", "new")])
    queued.run()
    [mail] = mailoutbox
    assert "\n" not in mail.subject and "\r" not in mail.subject
    assert mail.message()["Subject"].startswith("Monitor changes detected: Line Bcc: x")


@pytest.mark.parametrize(
    ("pages", "reason"),
    [
        ([("https://e.com/a", "same")], "no_changes"),
        (
            [("https://e.com/a", "changed", {"judgment": judged(False)})],
            "not_meaningful",
        ),
    ],
)
def test_no_mail_when_nothing_noteworthy_happened(
    team, member, scenario, queued, mailoutbox, pages, reason
):
    monitor = make_monitor(team, email=email_settings(MEMBER), goal="prices")
    check = scenario.run(monitor, pages)
    queued.run()
    assert mailoutbox == []
    assert not Delivery.objects.emails().exists()
    assert check.notification_status["email"]["reason"] == reason


def test_a_page_that_stays_gone_is_mailed_when_it_goes_and_when_it_is_back_only(
    team, member, site, settings, queued, mailoutbox, django_capture_on_commit_callbacks
):
    settings.ALLOW_PRIVATE_NETWORK_TARGETS = True
    url = site.html("/pricing", "Pricing", "<p>Pro costs $19.</p>")
    monitor = make_monitor(team, email=email_settings(MEMBER))
    Target.objects.create(monitor=monitor, type="scrape", urls=[url])

    def check() -> tuple[Check, int]:
        """A real check of the page, its deliveries sent: (check, mails sent)."""
        sent = len(mailoutbox)
        with django_capture_on_commit_callbacks(execute=True):
            done = runner.run(Check.objects.create(monitor=monitor, trigger="manual"))
        queued.run()
        done.refresh_from_db()
        return done, len(mailoutbox) - sent

    first, first_mails = check()
    site.remove("/pricing")
    removed, removed_mails = check()
    still_gone, still_gone_mails = check()
    site.html("/pricing", "Pricing", "<p>Pro costs $24.</p>")
    back, back_mails = check()

    assert first.pages.get().status == "new" and first_mails == 1
    assert removed.pages.get().status == "removed" and removed_mails == 1
    assert "[removed] " + url in mailoutbox[1].body
    page = still_gone.pages.get()
    assert (page.status, page.status_code, page.metadata["statusCode"]) == (
        "same",
        404,
        404,
    )
    assert still_gone.status == Check.Status.COMPLETED
    assert still_gone.summary["error"] == 0 and still_gone.summary["same"] == 1
    assert still_gone_mails == 0
    assert still_gone.notification_status["email"]["reason"] == "no_changes"
    assert not Delivery.objects.emails().filter(check_run=still_gone).exists()
    assert back.pages.get().status == "new" and back_mails == 1


def test_a_changed_page_without_a_judgment_counts_as_meaningful(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    scenario.run(monitor, [("https://e.com/a", "changed")])
    queued.run()
    assert len(mailoutbox) == 1


def not_judged() -> dict:
    """A changed page's fields when the judge failed open (no AI model)."""
    verdict = fail_open("no AI model is configured (LLM_BASE_URL is empty).")
    return {"judgment": verdict.judgment, "verdict": "not_judged"}


def test_a_change_nobody_judged_is_mailed_as_not_judged_never_as_meaningful(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER), goal="prices")
    scenario.run(monitor, [("https://e.com/a", "changed", not_judged())])
    queued.run()

    [mail] = mailoutbox
    assert mail.subject == (
        "Monitor changes detected: Pricing page: 1 page changed (not judged)"
    )
    assert "1 page changed (not judged). 1 changed page was not judged" in mail.body
    assert "so it is reported like any change." in mail.body
    assert "[changed (not judged)] https://e.com/a" in mail.body
    assert "<strong>changed (not judged)</strong>" in html_of(mail)
    for text in (mail.subject, mail.body, html_of(mail)):
        assert "meaningful" not in text


def test_a_mail_counts_meaningful_and_unjudged_changes_apart(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER), goal="prices")
    pages = [
        ("https://e.com/price", "changed", {"judgment": judged(True)}),
        ("https://e.com/a", "changed", not_judged()),
        ("https://e.com/b", "changed", not_judged()),
        ("https://e.com/clock", "changed", {"judgment": judged(False)}),
    ]
    scenario.run(monitor, pages)
    queued.run()

    [mail] = mailoutbox
    assert mail.subject.endswith(
        ": 3 pages changed (1 meaningful, 2 not judged), 1 more judged unimportant"
    )
    assert "1 more judged unimportant." in mail.body
    assert "2 changed pages were not judged against the goal" in mail.body
    assert "so they are reported like any change." in mail.body
    assert "[changed (meaningful)] https://e.com/price" in mail.body
    assert "[changed (not judged)] https://e.com/a" in mail.body
    assert "[changed (judged unimportant)] https://e.com/clock" in mail.body


def test_noise_beside_an_unjudged_change_is_still_mailed_with_no_meaningful_one(
    team, member, scenario, queued, mailoutbox
):
    # Reference §11.2: a changed page without a judgment counts as meaningful
    # for sending; the words still say nobody judged it.
    monitor = make_monitor(team, email=email_settings(MEMBER), goal="prices")
    pages = [
        ("https://e.com/a", "changed", not_judged()),
        ("https://e.com/clock", "changed", {"judgment": judged(False)}),
    ]
    check = scenario.run(monitor, pages)
    queued.run()

    [mail] = mailoutbox
    assert mail.subject.endswith(
        ": 1 page changed (not judged), 1 more judged unimportant"
    )
    check.refresh_from_db()
    assert check.notification_status["email"]["attempted"] is True


def test_disabled_email_sends_nothing(team, member, scenario, queued, mailoutbox):
    monitor = make_monitor(team, email=email_settings(MEMBER) | {"enabled": False})
    check = scenario.run(monitor, [("https://e.com/a", "new")])
    queued.run()
    assert mailoutbox == []
    assert check.notification_status["email"]["reason"] == "disabled"


def test_an_external_address_gets_only_the_confirmation_until_confirmed(
    team,
    member,
    api,
    client,
    scenario,
    queued,
    mailoutbox,
    scrape_monitor_body,
    django_capture_on_commit_callbacks,
):
    body = scrape_monitor_body | {
        "notification": {"email": email_settings(EXTERNAL, MEMBER)}
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/v2/monitor", body, format="json")
    assert response.status_code == 200, response.content
    subscriptions = {
        s["email"]: s for s in response.json()["data"]["emailRecipientSubscriptions"]
    }
    assert subscriptions[EXTERNAL]["status"] == "pending"
    assert subscriptions[EXTERNAL]["confirmationEmailSent"] is True
    assert subscriptions[MEMBER]["status"] == "confirmed"

    queued.run()
    [confirmation] = mailoutbox
    assert confirmation.to == [EXTERNAL]
    assert "Pricing page" in confirmation.subject
    confirm_link = re.search(r"http\S+/email/confirm/\S+/", confirmation.body)[0]
    assert f'href="{confirm_link}"' in html_of(confirmation)

    from monitors.models import Monitor

    monitor = Monitor.objects.get()
    check = scenario.run(monitor, [("https://example.com/pricing", "new")])
    queued.run()
    assert [m.to for m in mailoutbox[1:]] == [[MEMBER]]
    check.refresh_from_db()
    assert check.notification_status["email"]["pendingRecipients"] == 1
    assert check.notification_status["email"]["recipients"] == [MEMBER]

    assert client.post(path_of(confirm_link)).status_code == 200
    assert monitor.email_recipients.get(email=EXTERNAL).status == "confirmed"

    scenario.run(monitor, [("https://example.com/pricing", "changed")])
    queued.run()
    assert sorted(m.to[0] for m in mailoutbox[2:]) == [EXTERNAL, MEMBER]


def test_the_confirmation_is_sent_once(team, scenario, queued, mailoutbox):
    monitor = make_monitor(team, email=email_settings(EXTERNAL))
    deliveries.queue_confirmations(monitor)
    monitor.sync_email_recipients()
    deliveries.queue_confirmations(monitor)
    assert Delivery.objects.emails().filter(event="email.confirmation").count() == 1
    assert monitor.email_recipients.get().confirmation_sent_at is not None


def test_the_confirm_page_get_does_not_consume_the_link_and_post_does(team, client):
    monitor = make_monitor(team, email=email_settings(EXTERNAL))
    recipient = monitor.email_recipients.get()
    path = path_of(emails.confirm_url(recipient))

    page = client.get(path)
    assert page.status_code == 200
    assert b'<form method="post"' in page.content
    assert page["Cache-Control"].startswith("max-age=0")
    recipient.refresh_from_db()
    assert recipient.status == "pending"  # a link scanner's GET changes nothing

    done = client.post(path)
    assert done.status_code == 200
    recipient.refresh_from_db()
    assert recipient.status == "confirmed" and recipient.confirmed_at is not None


def test_the_unsubscribe_page_get_does_not_unsubscribe_and_post_does(
    team, member, client, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    recipient = monitor.email_recipients.get()
    path = path_of(emails.unsubscribe_url(recipient))

    assert client.get(path).status_code == 200
    recipient.refresh_from_db()
    assert recipient.status == "confirmed"

    scenario.run(monitor, [("https://e.com/a", "new")])  # queued, not yet sent
    assert client.post(path).status_code == 200
    recipient.refresh_from_db()
    assert recipient.status == "unsubscribed" and recipient.unsubscribed_at

    queued.run()
    assert mailoutbox == []
    assert Delivery.objects.emails().get().status == "cancelled"
    check = scenario.run(monitor, [("https://e.com/a", "changed")])
    queued.run()
    assert mailoutbox == []
    assert check.notification_status["email"]["unsubscribedRecipients"] == 1


def test_one_click_unsubscribe_works_without_a_csrf_token(team, member):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    recipient = monitor.email_recipients.get()
    strict = Client(enforce_csrf_checks=True)
    one_click = path_of(emails.one_click_url(recipient))

    # The page's own form needs its CSRF token...
    assert strict.post(path_of(emails.unsubscribe_url(recipient))).status_code == 403
    # ...a GET on the header's link only leads to the page...
    page = strict.get(one_click)
    assert page.status_code == 302
    assert page["Location"] == path_of(emails.unsubscribe_url(recipient))
    # ...a POST without the RFC 8058 body is refused...
    assert strict.post(one_click).status_code == 400
    recipient.refresh_from_db()
    assert recipient.status == "confirmed"

    # ...and the mail client's one-click POST works with no cookie or token.
    response = strict.post(one_click, {"List-Unsubscribe": "One-Click"})
    assert response.status_code == 200
    recipient.refresh_from_db()
    assert recipient.status == "unsubscribed"


def test_tampered_or_wrong_purpose_tokens_show_the_invalid_page(team, client):
    monitor = make_monitor(team, email=email_settings(EXTERNAL))
    recipient = monitor.email_recipients.get()
    unsubscribe_token = emails.unsubscribe_token(recipient)
    confirm_token = emails.confirm_token(recipient)

    assert client.get(f"/email/confirm/{unsubscribe_token}/").status_code == 404
    assert client.post(f"/email/confirm/{confirm_token[:-2]}xx/").status_code == 404
    assert client.post(f"/email/unsubscribe/{confirm_token}/").status_code == 404
    recipient.refresh_from_db()
    assert recipient.status == "pending"


def test_an_unsubscribed_address_stays_unsubscribed_when_re_added(
    team, api, queued, scrape_monitor_body, django_capture_on_commit_callbacks
):
    body = scrape_monitor_body | {"notification": {"email": email_settings(EXTERNAL)}}
    with django_capture_on_commit_callbacks(execute=True):
        monitor_id = api.post("/v2/monitor", body, format="json").json()["data"]["id"]
    recipient = EmailRecipient.objects.get()
    emails.unsubscribe_recipient(recipient)
    queued.clear()

    for recipients in ([], [EXTERNAL]):
        with django_capture_on_commit_callbacks(execute=True):
            response = api.patch(
                f"/v2/monitor/{monitor_id}",
                {"notification": {"email": email_settings(*recipients)}},
                format="json",
            )
        assert response.status_code == 200, response.content

    recipient.refresh_from_db()
    assert recipient.status == "unsubscribed"
    assert queued == []  # no second confirmation e-mail


# --- What the reader gets -------------------------------------------------------


def sent_bytes(mail) -> bytes:
    """The message as the SMTP backend puts it on the wire."""
    return mail.message(policy=email.policy.SMTP).as_bytes()


def test_the_one_click_unsubscribe_header_goes_out_as_a_plain_link(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER), name="Café — 日本")
    scenario.run(monitor, [("https://e.com/a", "new")])
    queued.run()

    [mail] = mailoutbox
    raw = sent_bytes(mail)
    link = emails.one_click_url(monitor.email_recipients.get())
    # One line with the bare <URL> (RFC 2369): an encoded word ("=?utf-8?q?…")
    # is no link to a mail client, which would offer no unsubscribe button.
    assert f"\r\nList-Unsubscribe: <{link}>\r\n".encode() in raw
    assert len(link) > 78  # longer than a folded line: the case that broke
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    assert parsed["List-Unsubscribe"] == f"<{link}>"
    assert parsed["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert parsed["Subject"] == "Monitor changes detected: Café — 日本: 1 new page"
    assert all(len(line) <= 998 for line in raw.split(b"\r\n"))


def headers_of(mail) -> email.message.EmailMessage:
    return email.message_from_bytes(sent_bytes(mail), policy=email.policy.default)


def test_change_mails_come_from_our_domain_each_monitor_in_a_thread_and_list_of_its_own(
    team, member, scenario, queued, mailoutbox, settings
):
    settings.DEFAULT_FROM_EMAIL = "Pagewatch <alerts@watch.acme.test>"
    prices = make_monitor(team, email=email_settings(MEMBER), name="Préis 🚀 plans")
    jobs = make_monitor(team, email=email_settings(MEMBER), name="Jobs")
    for monitor in (prices, jobs, prices):
        scenario.run(monitor, [(f"https://e.com/{monitor.pk}", "new")])
        queued.run()

    first, other, second = (headers_of(mail) for mail in mailoutbox)
    for sent in (first, other, second):
        assert sent["Message-ID"].endswith("@watch.acme.test>")
        assert sent["Date"] is not None
        assert sent["Auto-Submitted"] == "auto-generated"
    assert len({sent["Message-ID"] for sent in (first, other, second)}) == 3
    # The monitor's e-mails name one thread, which is not the other's.
    thread = f"<changes.{prices.pk}@watch.acme.test>"
    assert first["References"] == second["References"] == thread
    assert first["In-Reply-To"] == second["In-Reply-To"] == thread
    assert other["References"] == f"<changes.{jobs.pk}@watch.acme.test>"
    # A list per monitor, its name in words (RFC 2047 where it must be).
    assert first["List-Id"] == f"Préis plans <{prices.pk}.monitor.watch.acme.test>"
    assert other["List-Id"] == f"Jobs <{jobs.pk}.monitor.watch.acme.test>"
    raw = sent_bytes(mailoutbox[0])
    assert f"\r\nReferences: {thread}\r\n".encode() in raw


def test_an_e_mail_sent_again_is_the_same_message_to_the_mail_client(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    scenario.run(monitor, [("https://e.com/a", "new")])
    delivery = Delivery.objects.emails().get()

    # Each attempt builds the e-mail anew; a retry after a lost answer from
    # the mail server is then one message, not two, to clients that drop
    # duplicates (Gmail does).
    assert (
        emails.build(delivery).message()["Message-ID"]
        == emails.build(delivery).message()["Message-ID"]
    )


def test_page_errors_are_said_in_plain_words_not_as_stored_for_the_api(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    pages = [
        ("https://e.com/missing", "error", {"error": "HTTP 404", "status_code": 404}),
        (
            "https://e.com/slow",
            "error",
            {"error": "ReadTimeout: timed out", "error_kind": "timeout"},
        ),
    ]
    scenario.run(monitor, pages)
    queued.run()

    [mail] = mailoutbox
    for text in (mail.body, html_of(mail)):
        assert "Error: The page was not found (HTTP 404)." in text
        assert "ReadTimeout" not in text
        assert "Error: HTTP 404" not in text
    assert "Error: The page took too long to answer.\n" in mail.body
    assert "Error: The page took too long to answer.</small>" in html_of(mail)
    assert mail.subject.endswith(": 2 pages with errors")


def test_a_page_the_site_blocked_is_named_blocked_by_the_site_in_the_email(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    pages = [
        ("https://e.com/refused", "error", {"error": "HTTP 403", "status_code": 403}),
        (
            "https://e.com/challenged",
            "error",
            {"error": "challenge", "status_code": 503, "error_kind": "challenge"},
        ),
        ("https://e.com/missing", "error", {"error": "HTTP 404", "status_code": 404}),
    ]
    scenario.run(monitor, pages)
    queued.run()

    [mail] = mailoutbox
    assert mail.body.startswith(
        'Pagewatch could not do all of a check of the monitor "Pricing page"'
    )
    assert "found changes" not in mail.body + html_of(mail)
    assert "- [blocked by the site] https://e.com/refused" in mail.body
    assert "- [blocked by the site] https://e.com/challenged" in mail.body
    assert "- [could not be checked] https://e.com/missing" in mail.body
    assert html_of(mail).count("<strong>blocked by the site</strong>") == 2
    assert mail.subject.endswith(": 3 pages with errors (2 blocked by the site)")


def test_a_long_judge_reason_is_cut_with_an_ellipsis_not_mid_sentence_silently(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    reason = "The plan's price went up from 19 to 24 dollars a month. " * 10
    judgment = judged(True) | {"reason": reason}
    scenario.run(monitor, [("https://e.com/a", "changed", {"judgment": judgment})])
    queued.run()

    [mail] = mailoutbox
    [why] = [line for line in mail.body.splitlines() if line.strip().startswith("Why:")]
    assert why.endswith("…")
    assert len(why.strip().removeprefix("Why: ")) <= 300


def test_a_reason_in_a_right_to_left_language_keeps_its_own_direction(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    reason = "ارتفع السعر من 19 إلى 24 دولارًا"
    judgment = judged(True) | {"reason": reason}
    scenario.run(monitor, [("https://e.com/a", "changed", {"judgment": judgment})])
    queued.run()

    [mail] = mailoutbox
    assert f'<span dir="auto">{reason}</span>' in html_of(mail)


def test_a_change_email_says_when_the_check_looked_on_the_teams_clock(
    team, member, scenario, queued, mailoutbox
):
    team.time_zone = "Europe/Berlin"
    team.save()
    monitor = make_monitor(team, email=email_settings(MEMBER))
    with time_machine.travel(datetime(2026, 3, 2, 8, 0, tzinfo=UTC), tick=False):
        scenario.run(monitor, [("https://e.com/a", "changed")])
    queued.run()

    [mail] = mailoutbox
    assert "See this check (Mon 02 Mar 2026, 09:00 CET): http" in mail.body
    assert "(Mon 02 Mar 2026, 09:00 CET)" in html_of(mail)


TWO_HUNKS = (
    "--- previous.md\n+++ current.md\n@@ -1,2 +1,2 @@\n # Plans\n-Pro $19/mo\n"
    "+Pro $24/mo\n@@ -40,2 +40,2 @@\n # Contact\n-Call us\n+Write to us\n"
)


def test_diff_excerpts_say_which_lines_went_and_came_without_hunk_headers(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER, include_diffs=True))
    diff = {"text": TWO_HUNKS, "json": {}}
    scenario.run(monitor, [("https://e.com/a", "changed", {"diff": diff})])
    queued.run()

    [mail] = mailoutbox
    assert "@@" not in mail.body and "@@" not in html_of(mail)
    assert (
        "lines starting with - were removed, lines starting with + were added"
        in mail.body
    )
    # Lines left out between two parts of the page show as "…"; nothing is
    # left out above a part that starts at the top.
    excerpt = mail.body.split("Changes on https://e.com/a:\n")[1].split("\nSee ")[0]
    assert excerpt.splitlines() == [
        "     # Plans",
        "    -Pro $19/mo",
        "    +Pro $24/mo",
        "    …",
        "     # Contact",
        "    -Call us",
        "    +Write to us",
    ]
    assert '<span style="color: #6b7280;">…</span>' in html_of(mail)


def test_each_change_links_to_what_changed_in_pagewatch_and_the_link_opens(
    team, member, scenario, queued, mailoutbox, client
):
    monitor = make_monitor(team, email=email_settings(MEMBER, include_diffs=True))
    check = scenario.run(
        monitor, [("https://e.com/a", "changed"), ("https://e.com/b", "new")]
    )
    queued.run()

    [mail] = mailoutbox
    changed = check.pages.get(status="changed")
    page_url = settings.PUBLIC_BASE_URL + changed.get_absolute_url()
    assert f'<a href="{page_url}">See what changed</a>' in html_of(mail)
    assert f"\n\nSee what changed in full: {page_url}" in mail.body
    assert html_of(mail).count("See what changed</a>") == 1  # not for a new page
    client.force_login(member)
    assert client.get(path_of(page_url)).status_code == 200
    assert client.get(path_of(check_url_of(check))).status_code == 200


def check_url_of(check: Check) -> str:
    return settings.PUBLIC_BASE_URL + check.get_absolute_url()


def test_a_long_list_stops_at_20_pages_and_points_to_the_check_for_the_rest(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER), name="Shop")
    pages = [(f"https://e.com/p{i}", "changed") for i in range(25)]
    check = scenario.run(monitor, pages + [("https://e.com/n", "new")])
    queued.run()

    [mail] = mailoutbox
    assert (
        mail.subject == "Monitor changes detected: Shop: 25 pages changed, 1 new page"
    )
    assert mail.body.count("\n- [") == emails.PAGES_LISTED
    assert "... and 6 more pages: see them all on the check's page" in mail.body
    assert (
        f'… and 6 more pages: <a href="{check_url_of(check)}">see them all'
        in html_of(mail)
    )


def test_a_first_check_says_every_page_is_new_rather_than_changed(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER), name="Site")
    scenario.run(monitor, [("https://e.com/a", "new"), ("https://e.com/b", "new")])
    scenario.run(monitor, [("https://e.com/a", "same"), ("https://e.com/c", "new")])
    queued.run()

    first, later = mailoutbox
    assert first.subject == "Monitor changes detected: Site: 2 new pages"
    for text in (first.body, html_of(first)):
        assert "for the first time. Every page it found is listed as new" in text
        assert "found changes" not in text
    assert later.body.startswith('Pagewatch found changes on the monitor "Site"')


def test_the_webhook_off_mail_says_what_happened_and_links_to_the_edit_page(
    team, member, receiver, scenario, queued, mailoutbox, client
):
    receiver.then(410)
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    scenario.run(monitor, [("https://e.com/a", "new")])
    queued.run()

    [mail] = mailoutbox
    assert mail.subject == 'Webhook turned off for the monitor "Pricing page"'
    assert "answered that it no longer exists" in mail.body.split("\n\n")[1]
    edit_url = settings.PUBLIC_BASE_URL + reverse("monitor-edit", args=[monitor.pk])
    to_field = f"{edit_url}#field-webhook_url"
    assert to_field in mail.body
    assert f'<a href="{to_field}">edit the monitor in Pagewatch</a>' in html_of(mail)
    client.force_login(member)
    assert client.get(path_of(edit_url)).status_code == 200


def test_the_webhook_off_mail_names_the_address_in_shape_as_the_activity_log_does(
    team, member, site, receiver, scenario, queued, mailoutbox
):
    hook = Receiver(site, "/hooks/T0A1B2/s3cretPathToken").then(410)
    dead = hook.url + "?token=s3cretQueryToken"
    monitor = make_monitor(team, webhook=webhook_config(dead))
    scenario.run(monitor, [("https://e.com/a", "new")])
    queued.run()

    [mail] = mailoutbox
    logged = Activity.objects.get(kind=Activity.Kind.WEBHOOK_DISABLED)
    shape = (
        f"{urlsplit(dead).scheme}://{urlsplit(dead).netloc}/hooks/••••/••••?token=••••"
    )
    assert logged.details["url"] == shape
    for text in (mail.subject, mail.body, html_of(mail)):
        assert "s3cret" not in text
    assert f"its webhook at {shape}" in mail.body
    assert f"its webhook at <strong>{shape}</strong>" in html_of(mail)


def test_the_webhook_off_mail_says_what_stopped_why_and_what_to_do_in_plain_words(
    team, member, receiver, scenario, queued, mailoutbox, client
):
    receiver.then(410)
    monitor = make_monitor(team, webhook=webhook_config(receiver.url))
    scenario.run(monitor, [("https://e.com/a", "new")])
    queued.run()

    [mail] = mailoutbox
    what, why, unaffected, to_do, *rest = mail.body.split("\n\n")
    assert what.startswith("Pagewatch stopped sending updates of the monitor")
    assert why.startswith("Why: ")
    assert why.count(". ") == 0  # one sentence
    assert "410" not in why and "HTTP" not in why
    assert to_do.startswith("What to do: ")
    assert 'under "Webhook"' in to_do
    # It goes to every member; viewers learn who can act on it.
    assert "the team's owners and editors can" in to_do
    # The API is a hint for developers at the very end, never a PATCH recipe.
    for text in (mail.body, html_of(mail)):
        assert "PATCH" not in text
        assert "/v2/" not in text
        assert text.index("What to do") < text.index("For developers")
    edit_url = (
        settings.PUBLIC_BASE_URL
        + reverse("monitor-edit", args=[monitor.pk])
        + "#field-webhook_url"
    )
    assert edit_url in to_do
    assert f'<a href="{edit_url}">' in html_of(mail)
    client.force_login(member)
    edit_page = client.get(path_of(edit_url)).content.decode()
    assert 'id="field-webhook_url"' in edit_page


RAW_CONNECT_ERROR = "httpx.ConnectError: [Errno 111] Connection refused"


def test_a_change_mail_says_a_page_error_in_words_and_the_api_keeps_the_raw_text(
    team, member, scenario, queued, mailoutbox, api
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    pages = [
        ("https://e.com/new", "new"),
        (
            "https://e.com/down",
            "error",
            {"error": RAW_CONNECT_ERROR, "error_kind": "refused"},
        ),
    ]
    check = scenario.run(monitor, pages)
    queued.run()

    [mail] = mailoutbox
    for text in (mail.subject, mail.body, html_of(mail)):
        assert "Errno" not in text and "httpx" not in text
    assert "Error: The site refused the connection.\n" in mail.body
    assert "<small>Error: The site refused the connection.</small>" in html_of(mail)
    # Integrators still get the exact reason.
    shown = api.get(f"/v2/monitor/{monitor.pk}/checks/{check.pk}").json()
    [down] = [p for p in shown["data"]["pages"] if p["url"] == "https://e.com/down"]
    assert down["error"] == RAW_CONNECT_ERROR


@pytest.mark.parametrize(
    ("reason", "hidden", "said"),
    [
        (
            "SearXNG answered HTTP 502: <html><body>Bad gateway</body></html>",
            ("HTTP 502", "Bad gateway"),
            "The web search failed.",
        ),
        (
            NOT_CONFIGURED,
            ("SEARXNG_URL", "BRAVE_API_KEY"),
            "no web search service is set up for this Pagewatch yet",
        ),
        (
            "The web search failed: “acme”: Brave Search answered HTTP 401"
            " (Bad token). Check BRAVE_API_KEY.",
            ("BRAVE_API_KEY",),
            "Brave Search answered HTTP 401 (Bad token). An administrator should"
            " check the key of the web search service.",
        ),
    ],
)
def test_a_failed_search_in_a_change_mail_is_said_as_the_failing_alert_says_it(
    team, member, scenario, queued, mailoutbox, reason, hidden, said
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    check = scenario.start(monitor)
    check.target_results = [
        {"type": "search", "searchCompleted": False, "degradedReason": reason}
    ]
    check.save(update_fields=["target_results"])
    scenario.page(check, "https://e.com/new", "new")
    scenario.finish(check)
    queued.run()

    [mail] = mailoutbox
    for text in (mail.body, html_of(mail)):
        assert said in text
        for raw in hidden:
            assert raw not in text


def test_a_mail_about_pages_that_could_not_be_checked_does_not_claim_changes(
    team, member, scenario, queued, mailoutbox
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    pages = [
        ("https://e.com/same", "same"),
        ("https://e.com/down", "error", {"error_kind": "timeout"}),
    ]
    scenario.run(monitor, pages)
    queued.run()

    [mail] = mailoutbox
    assert mail.subject == "Monitor check problems: Pricing page: 1 page with an error"
    assert "changes" not in mail.subject.lower()


def test_the_confirmation_is_on_the_monitors_list_as_its_changes_are(
    team, queued, mailoutbox, settings, django_capture_on_commit_callbacks
):
    settings.DEFAULT_FROM_EMAIL = "alerts@watch.acme.test"
    with django_capture_on_commit_callbacks(execute=True):
        monitor = make_monitor(team, email=email_settings(EXTERNAL), name="Prices")
    queued.run()

    [confirmation] = mailoutbox
    sent = headers_of(confirmation)
    assert sent["List-Id"] == f"Prices <{monitor.pk}.monitor.watch.acme.test>"
    assert sent["Message-ID"].endswith("@watch.acme.test>")


def test_the_confirmation_says_what_the_monitor_watches_and_what_mail_would_come(
    team, queued, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        monitor = make_monitor(team, email=email_settings(EXTERNAL))
    urls = [f"https://example.com/p{n}<b>" for n in range(7)]
    Target.objects.create(monitor=monitor, type="scrape", urls=urls)
    queued.run()

    [confirmation] = mailoutbox
    assert (
        "It watches: example.com/p0<b>, example.com/p1<b>, example.com/p2<b>, "
        "example.com/p3<b>, example.com/p4<b> and 2 more." in confirmation.body
    )
    assert "when Pagewatch finds changes there or cannot check them" in (
        confirmation.body
    )
    assert "a link to unsubscribe" in confirmation.body
    page = html_of(confirmation)
    assert "example.com/p0&lt;b&gt;" in page and "p0<b>" not in page
    assert "and 2 more." in page


def test_unsubscribing_from_a_monitors_e_mails_is_in_the_teams_activity_log(
    team, member, client
):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    recipient = monitor.email_recipients.get()
    path = path_of(emails.unsubscribe_url(recipient))

    client.get(path)
    assert not Activity.objects.filter(kind=Activity.Kind.EMAIL_UNSUBSCRIBED)
    client.post(path)
    client.post(path)  # already unsubscribed: nothing more to say

    [entry] = Activity.objects.filter(team=team, kind=Activity.Kind.EMAIL_UNSUBSCRIBED)
    assert entry.via == Activity.Via.EMAIL and entry.monitor == monitor
    assert entry.actor_words == MEMBER and entry.details == {"email": MEMBER}
    assert entry.sentence == (
        f"{MEMBER} unsubscribed from the e-mails of monitor “{monitor.name}”, "
        "with the link in an e-mail"
    )


def test_a_one_click_unsubscribe_is_in_the_teams_activity_log(team, member):
    monitor = make_monitor(team, email=email_settings(MEMBER))
    recipient = monitor.email_recipients.get()
    one_click = path_of(emails.one_click_url(recipient))

    Client().post(one_click, {"List-Unsubscribe": "One-Click"})

    [entry] = Activity.objects.filter(team=team, kind=Activity.Kind.EMAIL_UNSUBSCRIBED)
    assert entry.monitor == monitor and entry.actor_words == MEMBER


def test_the_confirmation_names_who_added_the_address_on_the_dashboard(
    team, client, django_user_model, queued, mailoutbox,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    from monitors.models import Membership
    from tests.test_dashboard_views import scrape_form

    olive = django_user_model.objects.create_user(
        "olive", "olive@acme.test", first_name="Olive", last_name="Stone"
    )
    Membership.objects.create(team=team, user=olive, role=Membership.Role.EDITOR)
    client.force_login(olive)
    form = scrape_form(email_enabled="on", email_recipients=EXTERNAL)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("monitor-create"), form)
    assert response.status_code == 302
    queued.run()

    [confirmation] = mailoutbox
    said = f"Olive Stone of the team Acme added {EXTERNAL} to the e-mail alerts"
    assert said in confirmation.body
    assert said.replace(EXTERNAL, f"<strong>{EXTERNAL}</strong>") in html_of(
        confirmation
    )
    recipient = EmailRecipient.objects.get(email=EXTERNAL)
    assert recipient.added_by == "Olive Stone"


def test_a_member_who_leaves_and_rejoins_gets_the_monitors_mails_again(
    team, member, client, scenario, queued, mailoutbox
):
    from django.utils import timezone

    from monitors.models import Membership
    from teams.activity import SYSTEM
    from teams.members import member_left
    from teams.models import Invitation

    monitor = make_monitor(team, email=email_settings(MEMBER))
    Membership.objects.get(team=team, user=member).remove()
    member_left(SYSTEM, team, member)
    scenario.run(monitor, [("https://example.com/a", "new")])
    queued.run()
    assert mailoutbox == []  # out of the team: asked like any outside address

    _, token = Invitation.issue(team, MEMBER, "viewer", None, timezone.now())
    client.force_login(member)
    response = client.post(reverse("invitation-accept", args=[token]))
    assert response.status_code == 302

    recipient = monitor.email_recipients.get()
    assert (recipient.status, recipient.source) == ("confirmed", "team")
    assert recipient.confirmed_at is not None
    scenario.run(monitor, [("https://example.com/b", "new")])
    queued.run()
    [mail] = mailoutbox
    assert mail.to == [MEMBER] and "https://example.com/b" in mail.body


def test_a_name_longer_than_the_column_is_cut_not_a_server_error(
    team, client, django_user_model, queued, mailoutbox,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    from monitors.models import Membership
    from tests.test_dashboard_views import scrape_form

    # Django's user names hold 150 characters each: a full name is 301.
    long = django_user_model.objects.create_user(
        "long", "long@acme.test", first_name="O" * 150, last_name="S" * 150
    )
    Membership.objects.create(team=team, user=long, role=Membership.Role.EDITOR)
    client.force_login(long)
    form = scrape_form(email_enabled="on", email_recipients=EXTERNAL)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("monitor-create"), form)
    assert response.status_code == 302
    queued.run()

    recipient = EmailRecipient.objects.get(email=EXTERNAL)
    column = EmailRecipient._meta.get_field("added_by").max_length
    assert recipient.added_by == ("O" * 150 + " " + "S" * 150)[:column]
    [confirmation] = mailoutbox
    assert recipient.added_by in confirmation.body


def test_the_confirmation_names_the_person_whose_api_key_added_the_address(
    team, django_user_model, queued, mailoutbox, scrape_monitor_body,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    from rest_framework.test import APIClient

    from monitors.models import ApiKey, Membership

    ana = django_user_model.objects.create_user("ana", "ana@acme.test")
    Membership.objects.create(team=team, user=ana, role=Membership.Role.EDITOR)
    _, raw = ApiKey.issue(team, name="deploys", created_by=ana)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    body = scrape_monitor_body | {"notification": {"email": email_settings(EXTERNAL)}}

    with django_capture_on_commit_callbacks(execute=True):
        monitor_id = api.post("/v2/monitor", body, format="json").json()["data"]["id"]
    queued.run()
    [confirmation] = mailoutbox
    assert f"ana of the team Acme added {EXTERNAL}" in confirmation.body

    # Added later by an edit, by a key nobody made: the team is named.
    _, nobodys = ApiKey.issue(team, name="robot")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {nobodys}")
    edit = {"notification": {"email": email_settings(EXTERNAL, "kim@partner.test")}}
    with django_capture_on_commit_callbacks(execute=True):
        api.patch(f"/v2/monitor/{monitor_id}", edit, format="json")
    queued.run()
    assert mailoutbox[-1].to == ["kim@partner.test"]
    assert "The team Acme added kim@partner.test" in mailoutbox[-1].body


def test_someone_outside_the_team_gets_no_links_they_could_not_open(
    team, member, scenario, queued, mailoutbox, client
):
    """Pagewatch's pages need a member's sign-in: an address outside the team
    is offered none of them, only the pages watched and its unsubscribe link.
    A member's e-mail keeps them, and each opens for the member."""
    team.credit_allowance = 1000
    team.save()
    monitor = make_monitor(
        team, email=email_settings(EXTERNAL, MEMBER, include_diffs=True), name="Shop"
    )
    monitor.email_recipients.filter(email=EXTERNAL).update(status="confirmed")
    mailoutbox.clear()
    pages = [(f"https://e.com/p{i}", "changed") for i in range(22)]
    check = scenario.run(monitor, pages)
    Check.objects.filter(pk=check.pk).update(actual_credits=3)
    queued.run()

    theirs = next(m for m in mailoutbox if m.to == [EXTERNAL])
    ours = next(m for m in mailoutbox if m.to == [MEMBER])
    outsider = monitor.email_recipients.get(email=EXTERNAL)
    for text in (theirs.body, html_of(theirs)):
        dashboard_links = [
            link
            for link in re.findall(r"https?://[^\s\"<>]+", text)
            if link.startswith(settings.PUBLIC_BASE_URL)
        ]
        assert dashboard_links == [emails.unsubscribe_url(outsider)]
        assert "https://e.com/p0" in text  # the watched pages themselves stay
        assert "Credits used" not in text and "your team" not in text
    assert "... and 2 more pages.\n" in theirs.body
    assert "… and 2 more pages.</p>" in html_of(theirs)
    assert "See this check" not in theirs.body
    assert "See what changed" not in html_of(theirs)

    assert check_url_of(check) in ours.body and "See what changed" in ours.body
    assert "Credits used" in ours.body
    client.force_login(member)
    assert client.get(path_of(check_url_of(check))).status_code == 200


def test_a_member_removed_from_the_team_stops_getting_its_monitors_e_mails(
    team, member, client, django_user_model, scenario, queued, mailoutbox
):
    """A member's address is on a monitor's e-mails without confirming: the
    team vouched for it. Out of the team, that no longer holds: they get
    nothing more until they confirm like any address outside the team."""
    from monitors.models import Membership

    owner = django_user_model.objects.create_user("olive", "olive@acme.test")
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    monitor = make_monitor(team, email=email_settings(MEMBER, EXTERNAL))
    monitor.email_recipients.filter(email=EXTERNAL).update(status="confirmed")
    assert monitor.email_recipients.get(email=MEMBER).status == "confirmed"
    client.force_login(owner)

    leaving = Membership.objects.get(team=team, user=member)
    client.post(reverse("member-remove", args=[leaving.pk]))
    mailoutbox.clear()
    scenario.run(monitor, [("https://e.com/a", "new")])
    queued.run()

    assert [m.to for m in mailoutbox] == [[EXTERNAL]]
    recipient = monitor.email_recipients.get(email=MEMBER)
    assert recipient.status == EmailRecipient.Status.PENDING
    assert recipient.confirmed_at is None


def test_a_member_who_leaves_and_comes_back_gets_the_teams_e_mails_again(
    team, member, client, scenario, queued, mailoutbox
):
    """A monitor without its own list mails whoever is in the team."""
    from monitors.models import Membership

    monitor = make_monitor(team, email=email_settings())
    scenario.run(monitor, [("https://e.com/a", "new")])
    queued.run()
    assert [m.to for m in mailoutbox] == [[MEMBER]]
    client.force_login(member)
    client.post(reverse("member-remove", args=[Membership.objects.get(user=member).pk]))
    scenario.run(monitor, [("https://e.com/a", "changed")])
    queued.run()
    assert len(mailoutbox) == 1

    Membership.objects.create(team=team, user=member)
    scenario.run(monitor, [("https://e.com/a", "removed")])
    queued.run()
    assert [m.to for m in mailoutbox] == [[MEMBER], [MEMBER]]


def test_an_address_confirming_a_monitors_e_mails_is_in_the_teams_activity_log(
    team, client
):
    """The team learns when its alerts start going to an address outside it,
    as it does when one stops them."""
    monitor = make_monitor(team, email=email_settings(EXTERNAL))
    recipient = monitor.email_recipients.get()
    path = path_of(emails.confirm_url(recipient))

    client.get(path)
    assert not Activity.objects.filter(kind="monitor.email_confirmed")
    client.post(path)
    client.post(path)  # confirmed already: nothing more to say

    [entry] = Activity.objects.filter(team=team, kind="monitor.email_confirmed")
    assert entry.via == Activity.Via.EMAIL and entry.monitor == monitor
    assert entry.details == {"email": EXTERNAL}
    assert entry.sentence == (
        f"{EXTERNAL} confirmed the e-mails of monitor “{monitor.name}”, "
        "with the link in an e-mail"
    )
