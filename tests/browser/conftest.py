"""Real Chromium (Debian's /usr/bin/chromium) driven by Playwright against
pytest-django's live_server. No browser is ever downloaded.

Without Chromium the tests are skipped with a notice — except under CI=true,
where a missing browser fails the run instead of hiding it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from checks import dispatch
from monitors.models import Membership
from tests.browser.people import PASSWORD

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = (
        f"{CHROMIUM} is missing: install Debian's Chromium (apt-get install chromium) "
        "to run the browser tests"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " (CI=true: not skipping)", pytrace=False)
    print(f"\nSKIPPED browser test: {reason}")
    pytest.skip(reason)


@pytest.fixture
def chromium(live_server, monkeypatch) -> Iterator[Any]:
    """A browser per test. Started after the test database exists and stopped
    before the next test: Playwright's sync API keeps an event loop running in
    this thread, which Django's ORM would otherwise refuse to run beside."""
    _require_chromium()
    from playwright.sync_api import sync_playwright

    # The ORM calls the tests make between browser steps are plain synchronous
    # code in this thread, so the async-safety guard does not apply to them.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        # Started, Playwright leaves this thread in a context where Django's
        # connections are new ones: on in-memory SQLite, this thread's ORM
        # calls would go through a second connection to the shared database,
        # and fail with "database table is locked" (not a wait) whenever they
        # touch a table that a request of the live server is using. Back on
        # the one connection the live server's threads share.
        for alias, shared in live_server.thread.connections_override.items():
            connections[alias] = shared
        yield browser
        browser.close()


class PageProblems:
    """Everything a page did that it should not: dialogs (alert/confirm from
    injected script), CSP violations and console errors."""

    def __init__(self) -> None:
        self.dialogs: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []

    def attach(self, page: Any) -> None:
        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        def on_console(message: Any) -> None:
            if message.type == "error":
                self.console_errors.append(message.text)

        page.on("dialog", on_dialog)
        page.on("console", on_console)
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))

    def csp_violations(self, page: Any) -> list[str]:
        reported = page.evaluate("window.__cspViolations || []")
        logged = [e for e in self.console_errors if "Content Security Policy" in e]
        return list(reported) + logged


# Recorded before any page script runs (DevTools-injected, so CSP does not apply).
_WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline'));
});
"""


@pytest.fixture
def browser_page(chromium, live_server, settings) -> Iterator[Any]:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    context = chromium.new_context(
        base_url=live_server.url, viewport={"width": 1280, "height": 900}
    )
    context.add_init_script(_WATCH_CSP)
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.problems = PageProblems()
    page.problems.attach(page)
    yield page
    context.close()


@pytest.fixture
def screenshot() -> Any:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str, *, full_page: bool = True) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


@pytest.fixture
def member(team: Any, django_user_model: Any) -> Any:
    """Olive, owner of the team, who signs in with people.PASSWORD."""
    user = django_user_model.objects.create_user("olive", "olive@example.com", PASSWORD)
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list:
    """Checks the dashboard queued. No broker: the test moves them along."""
    ids: list = []
    monkeypatch.setattr(dispatch, "enqueue", ids.append)
    return ids
