"""Who signs in to the dashboard in browser tests, and how."""

from __future__ import annotations

import re
from typing import Any

PASSWORD = "correct-horse-battery-staple"


def sign_in(page: Any, username: str = "olive") -> None:
    page.goto("/accounts/login/")
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/$"))
