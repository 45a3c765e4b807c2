"""The goal judge for web search results: does a page a
search found matter for the monitor's goal?

The model sees the goal in its instructions and the result -- its title,
address, publish time, the search's snippet and the page's text, cut to the
input budget -- inside a data block (checks.ai.data): all of it came from
strangers. Its answer is exactly ``{relevant, confidence, reason}``,
validated in code, and becomes the page's judgment ``{meaningful,
confidence, reason, meaningfulChanges: []}`` (a search result has no change
to quote). No model, an error or an unusable answer give the fail-open
judgment, marked not judged (checks.ai.judge.not_judged): the search stage
then reports the result as one it could not judge.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from checks.ai.client import LLM, LLMError
from checks.ai.data import DataBlock, clip, fitted, plain_text, weight
from checks.ai.judge import REASON_MAX, Verdict, not_judged

# Room kept for the instructions around the result, in characters.
_INSTRUCTIONS_ROOM = 2500
_MIN_TEXT_CHARS = 1000

RELEVANCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "relevant": {"type": "boolean"},
        "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
        "reason": {"type": "string"},
    },
    "required": ["relevant", "confidence", "reason"],
    "additionalProperties": False,
}

_SYSTEM = """\
You decide whether a web page found by a web search matters for its owner's goal.

The owner's goal:
{goal}

{notice}

Rules:
- relevant: true only when the page itself is about what the goal asks for; \
a page that merely mentions the search words, a list of links, an advert or \
an unrelated page is not relevant.
- confidence: "high", "medium" or "low" ("low" when the page hints at it \
without saying it clearly).
- reason: one or two plain sentences in the language of the owner's goal \
(whatever the language of the page), without links or markup."""


def result_text(
    *,
    title: str,
    url: str,
    snippet: str,
    published: datetime | None,
    text: str,
    max_chars: int,
) -> tuple[str, bool]:
    """What the judge is shown of a result, within `max_chars`, and whether
    the page's text was cut to fit (the text then says so)."""
    head = [f"Title: {title or '(none)'}", f"Address: {url}"]
    if published is not None:
        head.append(f"Published: {published.isoformat()}")
    if snippet:
        head.append(f"Search snippet: {snippet}")
    header = "\n".join(head)
    room = max(max_chars - len(header) - 20, _MIN_TEXT_CHARS)
    body, cut = clip(text.strip(), room)
    if cut:
        body += "\n[the rest of the page was left out]"
    return f"{header}\n\nPage text:\n{body or '(empty)'}", cut


def messages(goal: str, shown: str) -> tuple[str, str]:
    """(system, user): the goal and rules outside the data block, the result
    inside it."""
    block = DataBlock.around(shown)
    system = _SYSTEM.format(goal=goal, notice=block.notice)
    user = f"The search result:\n{block.wrap(shown)}\n\nDoes it matter for the goal?"
    return system, user


async def judge_result(
    llm: LLM,
    *,
    goal: str,
    title: str,
    url: str,
    snippet: str,
    published: datetime | None,
    text: str,
) -> Verdict:
    """The model's verdict on one search result; the fail-open one when it
    gives none."""
    room = llm.config.max_input_chars - weight(goal) - _INSTRUCTIONS_ROOM
    shown, partial = fitted(
        lambda chars: result_text(
            title=title,
            url=url,
            snippet=snippet,
            published=published,
            text=text,
            max_chars=chars,
        ),
        room,
    )
    system, user = messages(goal, shown)
    try:
        answer = await llm.ask(
            name="relevance",
            schema=RELEVANCE_SCHEMA,
            system=system,
            user=user,
            # A verdict and one short reason.
            max_output_tokens=llm.config.max_output_tokens // 4,
        )
    except LLMError as exc:
        return not_judged(exc.message)
    judgment = {
        "meaningful": bool(answer["relevant"]),
        "confidence": answer["confidence"],
        "reason": plain_text(str(answer["reason"]), REASON_MAX),
        "meaningfulChanges": [],
    }
    return Verdict(judgment, judged=True, partial=partial)
