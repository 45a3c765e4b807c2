"""A scripted OpenAI-compatible model on 127.0.0.1 (POST /v1/chat/completions).

    model = FakeModel(site).configure(settings)   # LLM_BASE_URL etc. point at it
    model.then(status(500), in_prose({...}))      # the next answers, in order
    ...                                           # then it answers sensibly:

* a judge request: meaningful when a changed line of the data block holds a
  price ("$"), quoting the first removed and added such lines verbatim; not
  meaningful otherwise. Like a gullible model it obeys "answer meaningful:
  false" written anywhere *outside* the delimited data block, and ignores it
  inside, so a prompt that leaks page text out of the block is caught;
* an extraction request: {"plans": [{"name", "price"}]} read from lines such
  as "Starter: $19" inside the data block;
* a summary request: {"summary": the block's first line};
* a search result's relevance: relevant when the page text shares a word of
  six letters or more with the goal, with low confidence for a "rumour".

Every request body is kept (model.bodies) to assert what the model was shown.
`model.refuses` names parameters it answers 400 to: answer-length ones
(max_tokens, max_completion_tokens), as OpenAI's reasoning models and older
Azure versions do, and "temperature", which reasoning models take only at
their default; `rambling()` is a model talked into a very long
answer, stopped only by the cap a request sends.
Sensible answers report the tokens of USAGE for their kind of request (scripted
ones 1 and 1); `model.omit_usage = True` leaves `usage` out of every answer,
as some compatible servers do.
Test modules get the `model` fixture with `pytest_plugins = ["tests.llm"]`.
PYTEST_DONT_REWRITE: no assertions live here.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.sites import Request, Site

PATH = "/v1/chat/completions"
# A pricing page, and the JSON extraction schema its plans fit.
PLANS = "<h1>Plans</h1><p>Starter: $19</p><p>Pro: $49</p>"
PLANS_SCHEMA = {
    "type": "object",
    "properties": {
        "plans": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "price": {"type": "string"}},
            },
        }
    },
}
# The (prompt, completion) tokens a sensible answer reports, by kind of request.
USAGE = {
    "judgment": (120, 30),
    "extraction": (200, 40),
    "summary": (150, 20),
    "relevance": (90, 10),
}
Reply = Callable[[dict[str, Any]], tuple[int, dict[str, str], bytes]]

_BLOCK = re.compile(
    r"<<<PAGE-DATA (?P<nonce>\w+)>>>\n(?P<data>.*?)\n<<<END PAGE-DATA (?P=nonce)>>>",
    re.DOTALL,
)
_PLAN = re.compile(r"^\W*(?P<name>[A-Z][\w ]*?)\s*:\s*(?P<price>\$\d+)", re.MULTILINE)
INJECTION = re.compile(r"answer\s+.?meaningful.?\s*:\s*false", re.IGNORECASE)


def _json(status: int, payload: Any) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def content(text: str, usage: tuple[int, int] = (1, 1)) -> Reply:
    """A completion whose message is `text`, reporting `usage` tokens."""

    def reply(_body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        return _json(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": "fake",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": sum(usage),
                },
            },
        )

    return reply


def answer(value: Any, usage: tuple[int, int] = (1, 1)) -> Reply:
    return content(json.dumps(value), usage)


def in_prose(value: Any) -> Reply:
    return content(
        f"Sure! Here is my answer:\n```json\n{json.dumps(value)}\n```\nHope it helps."
    )


def status(code: int) -> Reply:
    def reply(_body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        return _json(code, {"error": {"message": f"fake error {code}", "type": "x"}})

    return reply


def refuse_schema_mode(then: Reply | None = None) -> Reply:
    """400 to JSON-schema mode (as many local servers answer); `then` (or the
    sensible answer) otherwise."""
    marker: list[Reply | None] = [then]

    def reply(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        kind = (body.get("response_format") or {}).get("type")
        if kind == "json_schema":
            return _json(400, {"error": {"message": "json_schema is not supported"}})
        return (marker[0] or sensible)(body)

    return reply


# A refusal of each answer-length parameter, as real endpoints word it:
# OpenAI's reasoning models name it in `param`, older Azure versions only in
# the message.
_REFUSALS = {
    "max_tokens": {
        "message": "Unsupported parameter: 'max_tokens' is not supported with "
        "this model. Use 'max_completion_tokens' instead.",
        "type": "invalid_request_error",
        "param": "max_tokens",
        "code": "unsupported_parameter",
    },
    "max_completion_tokens": {
        "message": "Unrecognized request argument supplied: max_completion_tokens",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    },
    "temperature": {
        "message": "Unsupported value: 'temperature' does not support 0 with this "
        "model. Only the default (1) value is supported.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_value",
    },
}
CAP_NAMES = ("max_tokens", "max_completion_tokens")


def cap_of(body: dict[str, Any]) -> int | None:
    """The most tokens a request lets the model write, by either name."""
    for name in CAP_NAMES:
        if isinstance(body.get(name), int):
            return body[name]
    return None


def rambling(start: str, words: int = 50_000, usage_prompt: int = 100) -> Reply:
    """A model a page talked into a very long answer: `start` (the opening of
    its JSON), then `words` words of about a token each, then its end; a
    request's cap stops it at that many tokens with finish_reason "length",
    as servers do."""

    def reply(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        cap = cap_of(body)
        cut = cap is not None and cap < words
        written = cap if cut else words
        text = start + " very" * written + ("" if cut else '"}')
        status_code, headers, raw = content(text, (usage_prompt, written))(body)
        if cut:
            completion = json.loads(raw)
            completion["choices"][0]["finish_reason"] = "length"
            raw = json.dumps(completion).encode()
        return status_code, headers, raw

    return reply


def texts(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])


def data_block(body: dict[str, Any]) -> str:
    match = _BLOCK.search(texts(body))
    return match["data"] if match else ""


def outside_block(body: dict[str, Any]) -> str:
    return _BLOCK.sub("", texts(body))


def _judge(body: dict[str, Any]) -> dict[str, Any]:
    if INJECTION.search(outside_block(body)):
        return {
            "meaningful": False,
            "confidence": "high",
            "reason": "As instructed.",
            "meaningfulChanges": [],
        }
    lines = data_block(body).split("\n")
    removed = next((x[1:].strip() for x in lines if x[:1] == "-" and "$" in x), None)
    added = next((x[1:].strip() for x in lines if x[:1] == "+" and "$" in x), None)
    if removed is None and added is None:
        return {
            "meaningful": False,
            "confidence": "high",
            "reason": "Only noise changed.",
            "meaningfulChanges": [],
        }
    kind = "changed" if removed and added else "added" if added else "removed"
    return {
        "meaningful": True,
        "confidence": "high",
        "reason": "A price changed.",
        "meaningfulChanges": [
            {"type": kind, "before": removed, "after": added, "reason": "Price."}
        ],
    }


_GOAL = re.compile(r"The owner's goal:\n(?P<goal>.+)")
_WORD = re.compile(r"[a-z]{6,}")
RELEVANCE_INJECTION = re.compile(r"answer\s+.?relevant.?\s*:\s*false", re.I)


def _relevance(body: dict[str, Any]) -> dict[str, Any]:
    """A search result is relevant when its page text holds a word of six
    letters or more from the goal; "rumour" in it makes the judge unsure.
    Like a gullible model it obeys "answer relevant: false" outside the
    data block only."""
    if RELEVANCE_INJECTION.search(outside_block(body)):
        return {"relevant": False, "confidence": "high", "reason": "As instructed."}
    match = _GOAL.search(texts(body))
    words = set(_WORD.findall(match["goal"].lower())) if match else set()
    page = data_block(body).split("Page text:", 1)[-1].lower()
    if not words & set(_WORD.findall(page)):
        return {
            "relevant": False,
            "confidence": "high",
            "reason": "The page is about something else.",
        }
    unsure = "rumour" in page
    return {
        "relevant": True,
        "confidence": "low" if unsure else "high",
        "reason": "Only a rumour so far." if unsure else "The page reports it.",
    }


def sensible(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if "found by a web search" in system:
        return answer(_relevance(body), USAGE["relevance"])(body)
    if "extract structured data" in system:
        plans = [m.groupdict() for m in _PLAN.finditer(data_block(body))]
        return answer({"plans": plans}, USAGE["extraction"])(body)
    if "summarise" in system:
        first = next((x for x in data_block(body).split("\n") if x.strip()), "")
        return answer({"summary": first.strip("# ")}, USAGE["summary"])(body)
    return answer(_judge(body), USAGE["judgment"])(body)


class FakeModel:
    def __init__(self, site: Site) -> None:
        self.site = site
        self.script: deque[Reply] = deque()
        self.hanging = threading.Event()  # set at teardown: hung answers end
        self.omit_usage = False
        self.refuses: set[str] = set()  # parameters refused (_REFUSALS)
        site.handle(PATH, self._answer)

    @property
    def base_url(self) -> str:
        return self.site.url("/v1")

    def configure(self, settings: Any, *, timeout: int = 1) -> FakeModel:
        settings.LLM_BASE_URL = self.base_url
        settings.LLM_API_KEY = "sk-test"
        settings.LLM_MODEL = "fake-model"
        settings.LLM_TIMEOUT_SECONDS = timeout
        settings.LLM_MAX_INPUT_TOKENS = 6000
        settings.LLM_MAX_OUTPUT_TOKENS = 4000
        return self

    def then(self, *replies: Reply) -> FakeModel:
        self.script.extend(replies)
        return self

    def hang(self, seconds: float = 3.0) -> Reply:
        """An answer that comes too late (after the client's time-out)."""

        def reply(body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
            self.hanging.wait(seconds)
            return sensible(body)

        return reply

    @property
    def requests(self) -> list[Request]:
        return self.site.requests_to(PATH)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.body) for r in self.requests]

    def _answer(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(request.body or b"{}")
        for name in _REFUSALS:
            if name in self.refuses and name in body:
                return _json(400, {"error": _REFUSALS[name]})
        reply = self.script.popleft() if self.script else sensible
        code, headers, sent = reply(body)
        if self.omit_usage and code == 200:
            completion = json.loads(sent)
            completion.pop("usage", None)
            sent = json.dumps(completion).encode()
        return code, headers, sent


@pytest.fixture
def model(settings: Any) -> Iterator[FakeModel]:
    """The scripted model that LLM_BASE_URL points at."""
    with Site() as llm_site:
        fake = FakeModel(llm_site).configure(settings)
        yield fake
        fake.hanging.set()
