"""The AI layer: one client for any OpenAI-compatible model, and what checks
ask of it (JSON extraction, summaries, the goal judge).

Modules: ``client`` (the LLM client and llm_available), ``formats`` (what a
target's formats ask for), ``data`` (page text as delimited data), ``judge``,
``extraction``; ``stage`` runs them for a batch of pages (imported by the
pipeline's judge: it needs checks.pipeline.outcome, which needs this package).
"""

from __future__ import annotations

from checks.ai.client import LLM, LLMConfig, LLMError, llm_available

__all__ = ["LLM", "LLMConfig", "LLMError", "llm_available"]
