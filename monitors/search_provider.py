"""Which web search provider this Pagewatch uses, as settings say (no network).

A domain question asked by the API, the dashboard and the estimate (is a
search target run at all?) as well as by the engine (checks.search, which
talks to the provider). Read per call, so tests can switch it.
"""

from __future__ import annotations

import re

from django.conf import settings

# In the order an empty SEARCH_PROVIDER picks them: SearXNG whenever it is set.
PROVIDERS = ("searxng", "brave", "tavily", "firecrawl")
# The setting each provider cannot work without.
REQUIRED_SETTING = {
    "searxng": "SEARXNG_URL",
    "brave": "BRAVE_API_KEY",
    "tavily": "TAVILY_API_KEY",
    "firecrawl": "FIRECRAWL_API_KEY",
}

NOT_CONFIGURED = (
    "Web searches are not run: no search provider is configured on this "
    "Pagewatch. An administrator sets SEARXNG_URL (a self-hosted SearXNG), or "
    "BRAVE_API_KEY, TAVILY_API_KEY or FIRECRAWL_API_KEY."
)

# The same, for the dashboard's readers: no setting names, but where an
# administrator reads how to set one up (as the form says of a missing model).
NOT_CONFIGURED_WORDS = (
    "Web searches are not run: no web search service is set up for this "
    "Pagewatch yet; an administrator sets one up as the README's “Watching "
    "the web” says."
)


# What a provider that refused its key asks for (checks.search.providers),
# said to the team without the setting's name.
KEY_REFUSED_WORDS = "An administrator should check the key of the web search service."


# A provider refusing for a reason of its own set-up ("SearXNG refused to
# answer in JSON (HTTP 403): allow the format in its settings.yml …"): the API
# and the dashboard say what an administrator changes; the messages people
# get (e-mails, chat) say it plainly (in_message_words).
REFUSED = "{provider} refused {what} (HTTP {code}): {fix}"
_REFUSED = re.compile(
    r"(: )?\b[A-Z][\w.-]* refused [^:]*? \(HTTP \d{3}\): .+?\.(?=\s|$)"
)
REFUSED_WORDS = (
    "The web search service refused the request; an administrator needs to "
    "check its set-up."
)


def in_plain_words(text: str) -> str:
    """`text` (a target's reason, a check's error, written for the API) with
    the missing provider and a refused key said without setting names, for
    the dashboard and the messages people get."""
    text = text.replace(NOT_CONFIGURED, NOT_CONFIGURED_WORDS)
    for setting in REQUIRED_SETTING.values():
        text = text.replace(f"Check {setting}.", KEY_REFUSED_WORDS)
    return text


def in_message_words(text: str) -> str:
    """in_plain_words, and a provider's refusal of its set-up said plainly:
    for the messages people get, and the dashboard, which names the refusal
    after "For the administrator:" (refusals)."""

    def plainly(match: re.Match[str]) -> str:
        # After "“acme”: " the sentence goes on in lower case.
        return (
            f": {REFUSED_WORDS[0].lower()}{REFUSED_WORDS[1:]}"
            if match[1]
            else REFUSED_WORDS
        )

    return _REFUSED.sub(plainly, in_plain_words(text))


def refusals(text: str) -> list[str]:
    """The providers' refusals of their set-up in `text`, as they are: what
    the dashboard tells the administrator beside the plain words."""
    return [match[0].removeprefix(": ") for match in _REFUSED.finditer(text)]


def _has_setting(name: str) -> bool:
    return bool(str(getattr(settings, REQUIRED_SETTING[name], "") or "").strip())


def configured_provider() -> str:
    """The provider's name (see PROVIDERS), "" when none is configured."""
    chosen = str(getattr(settings, "SEARCH_PROVIDER", "") or "").strip().lower()
    if chosen:
        return chosen if chosen in PROVIDERS and _has_setting(chosen) else ""
    return next((name for name in PROVIDERS if _has_setting(name)), "")


def not_run_reason() -> str:
    """Why search targets are not run ("" when they are)."""
    return "" if configured_provider() else NOT_CONFIGURED
