"""Reading a page with the model: a JSON object by schema, or a short summary.

The page's Markdown goes inside a data block (checks.ai.data), cut to the
input budget; the owner's schema and prompt are the instructions. Answers are
validated against the tightened schema (checks.ai.formats) by the client.
"""

from __future__ import annotations

from typing import Any

from checks.ai.client import LLM
from checks.ai.data import DataBlock, clip, fitted, plain_text, weight
from checks.ai.formats import Extraction

SUMMARY_MAX = 1000
# Identifies the summary instructions: summaries are reused for an unchanged
# page only when made by the same instructions.
SUMMARY_KEY = "summary-1"
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}
_INSTRUCTIONS_ROOM = 2000

_EXTRACT = """\
You extract structured data from one web page.
{notice}

Fill the JSON object from what the page says. Use only values found on the \
page; do not invent any. Where the page has no value for a field, use null if \
the schema allows it, otherwise an empty string, 0, false or an empty list.{prompt}"""

_SUMMARY = """\
You summarise one web page for someone who monitors it.
{notice}

Write a neutral summary of the page's main content in at most three short \
sentences of plain text, without links or markup."""


def _room(llm: LLM, reserved: int) -> int:
    """How much of the page the model is shown, by weight (checks.ai.data)."""
    return max(llm.config.max_input_chars - reserved - _INSTRUCTIONS_ROOM, 1000)


def _reserved(extraction: Extraction) -> int:
    return weight(extraction.prompt) + weight(str(extraction.schema))


def _page(markdown: str, llm: LLM, reserved: int) -> tuple[str, DataBlock]:
    text, cut = fitted(lambda chars: clip(markdown, chars), _room(llm, reserved))
    if cut:
        text += "\n[the rest of the page was left out]"
    return text, DataBlock.around(text)


async def extract(llm: LLM, extraction: Extraction, markdown: str) -> dict[str, Any]:
    """The page's object; raises checks.ai.LLMError when there is none."""
    text, block = _page(markdown, llm, _reserved(extraction))
    prompt = (
        f"\n\nThe page owner's instruction for this extraction:\n{extraction.prompt}"
        if extraction.prompt
        else ""
    )
    return await llm.ask(
        name="extraction",
        schema=extraction.schema,
        system=_EXTRACT.format(notice=block.notice, prompt=prompt),
        user=f"The page:\n{block.wrap(text)}",
        # A prompt without a schema accepts any object, which strict schema
        # mode cannot express.
        strict=extraction.has_schema,
    )


def extracted_in_part(llm: LLM, extraction: Extraction, markdown: str) -> bool:
    """Whether the page is too long for extract() to show the model whole:
    its object then comes from the part that fit."""
    return weight(markdown) > _room(llm, _reserved(extraction))


def summarized_in_part(llm: LLM, markdown: str) -> bool:
    """Whether the page is too long for summarize() to show the model whole:
    its summary is then of the part that fit."""
    return weight(markdown) > _room(llm, 0)


async def summarize(llm: LLM, markdown: str) -> str:
    """A short summary of the page; raises checks.ai.LLMError when none came."""
    text, block = _page(markdown, llm, 0)
    answer = await llm.ask(
        name="summary",
        schema=SUMMARY_SCHEMA,
        system=_SUMMARY.format(notice=block.notice),
        user=f"The page:\n{block.wrap(text)}",
        # Three short sentences.
        max_output_tokens=llm.config.max_output_tokens // 4,
    )
    return plain_text(answer["summary"], SUMMARY_MAX)
