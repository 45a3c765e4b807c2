"""Whether the AI judge can run at all on this installation.

A monitor asks for judging (judgeEnabled and a goal); the judge runs only
when an LLM is configured. Estimates count judging only then, and the engine's
judge asks the same question, so a judge that cannot run is never charged.
"""

from __future__ import annotations

from django.conf import settings


def judge_available() -> bool:
    """True when an LLM endpoint is configured (LLM_BASE_URL)."""
    # Read on every call, never at import: tests flip the setting.
    return bool(getattr(settings, "LLM_BASE_URL", ""))
