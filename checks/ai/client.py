"""The one LLM client: any OpenAI-compatible endpoint, answers as validated JSON.

Pointed by LLM_BASE_URL / LLM_API_KEY / LLM_MODEL at OpenAI, Ollama, vLLM,
llama.cpp's server, LM Studio, OpenRouter, Azure or a LiteLLM proxy, through
the official `openai` package, whose HTTP goes through Pagewatch's one
outbound door (checks.fetch): the address policy, time-outs and a byte cap
apply as to every other request, and the configured LLM host is the only
private address these calls may reach.

Structured output, most reliable first: JSON-schema mode, then JSON mode,
then JSON asked for in the prompt alone. A server that refuses a mode with
HTTP 400 is asked again in the next one (and remembered for that schema once
that one is answered, so later calls with it start there; a 400 to every mode
is about the request, and its words are said). Whatever comes back is parsed (JSON
wrapped in prose or a code fence is found) and validated with `jsonschema`;
extra keys are refused by the schemas themselves. Temperature 0, at most
TRIES tries, each with its own time-out.

Every request caps the answer's length (LLM_MAX_OUTPUT_TOKENS, or less for a
kind of call whose answers are short), so a page that talks the model into
writing at length costs no more than the cap. The cap is sent as `max_tokens`,
the name every compatible server reads (one that ignored the other name would
leave answers unbounded); OpenAI's reasoning models refuse it with HTTP 400
naming it, and are asked with `max_completion_tokens` instead (and the other
way round), once, remembered for that endpoint once answered. They refuse
`temperature: 0` too, with HTTP 400 naming it: they are asked again without
it, once, remembered the same way (neither refusal is taken for a refused
format). An answer cut off at the cap, or at a length limit of the model's
own, is not used and not asked for again.

Every failure is an LLMError whose message is safe to show. What every answer
used (its `usage`) is counted by kind of call (LLM.used), for
checks.models.AIUse, a cut one too.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import time
import traceback
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntEnum
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from checks.ai import patterns
from checks.errors import ErrorKind, asked_wait, service_words, wait_words
from checks.fetch import FetchError, OutboundClient, Resolver
from checks.fetch.errors import human_size
from monitors import rules
from monitors.judging import judge_available

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)

TRIES = 3
# Calls of one batch to the model at a time.
CONCURRENCY = 4
# After this many calls in a row that failed every try, the rest of the batch
# does not wait for the model again: a dead endpoint must not hold a check
# for TRIES x LLM_TIMEOUT_SECONDS per page.
GIVE_UP_AFTER_FAILED_CALLS = 3
# An answer larger than this is refused by the door (output size cap).
MAX_ANSWER_BYTES = 2 * 1024 * 1024
# A rough, model-independent count: English text averages ~4 characters per token.
CHARS_PER_TOKEN = 4
_RETRY_PAUSES = (0.2, 0.5)
# A busy endpoint (429, 503) that asks for a longer wait than this, with
# Retry-After, is not asked again in this batch: a check does not wait for it.
LONGEST_WAIT_SECONDS = 30
_PERMANENT_STATUSES = frozenset({401, 403, 404})
# The door's refusals: trying again cannot help.
_NEVER_RETRIED = frozenset({ErrorKind.BLOCKED_ADDRESS, ErrorKind.INVALID_URL})
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# Objects in what the model was shown are looked for up to this long: an
# answer longer than that, copied from the page, is not recognised.
SHOWN_OBJECT_CHARS = 8_000
# And reading them stops once tries that found no object have read this much
# (a page of nested braces would otherwise cost its length squared).
SHOWN_READ_BUDGET = 1_000_000
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
# The model's own answer is searched for objects this many characters a token
# of its cap at most: an answer of that many tokens averages ~4 characters a
# token, and twice that leaves room for long words and runs of spaces. Each
# failed try counts lines from the text's start, so an answer of stray "{"
# (up to MAX_ANSWER_BYTES) would otherwise cost its length squared.
ANSWER_CHARS_PER_TOKEN = 2 * CHARS_PER_TOKEN


def llm_available() -> bool:
    """Is a model configured? The domain's one answer (monitors.judging)."""
    return judge_available()


class LLMError(Exception):
    """No usable answer; `message` is safe to show a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _CutOff(LLMError):
    """The model answered, past the most tokens it may write."""


@dataclass
class Use:
    """What the requests of one kind of call used: the tokens their answers
    reported, and how many answers reported none (a compatible server may
    leave `usage` out: those tokens are unknown, never guessed)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unmeasured: int = 0

    def add(self, other: Use) -> None:
        self.requests += other.requests
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.unmeasured += other.unmeasured

    def count(self, usage: Any) -> None:
        self.requests += 1
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        if not (_is_count(prompt) and _is_count(completion)):
            self.unmeasured += 1
            return
        self.prompt_tokens += prompt
        self.completion_tokens += completion


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class Mode(IntEnum):
    """How the answer's JSON shape is asked for, most reliable first."""

    SCHEMA = 0  # response_format json_schema (strict)
    JSON = 1  # response_format json_object
    PROMPT = 2  # only the instructions ask for JSON


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    api_key: str
    model: str
    timeout: float
    max_input_tokens: int
    # The most tokens one answer may use; a kind of call may ask for less.
    max_output_tokens: int = 4000

    @classmethod
    def from_settings(cls) -> LLMConfig:
        return cls(
            base_url=str(settings.LLM_BASE_URL).rstrip("/"),
            api_key=str(getattr(settings, "LLM_API_KEY", "")),
            model=str(getattr(settings, "LLM_MODEL", "")),
            timeout=float(getattr(settings, "LLM_TIMEOUT_SECONDS", 30)),
            max_input_tokens=int(getattr(settings, "LLM_MAX_INPUT_TOKENS", 6000)),
            max_output_tokens=int(getattr(settings, "LLM_MAX_OUTPUT_TOKENS", 4000)),
        )

    @property
    def host(self) -> str:
        return (urlsplit(self.base_url).hostname or "").lower()

    @property
    def max_input_chars(self) -> int:
        """The input budget in characters of English text; other scripts
        weigh more against it (checks.ai.data.weight)."""
        return self.max_input_tokens * CHARS_PER_TOKEN


# --- The door as an httpx transport ----------------------------------------------


class DoorTransport(httpx.AsyncBaseTransport):
    """Hands the openai package's requests to checks.fetch's OutboundClient:
    its address policy, time-out, byte cap and no redirects."""

    _HOP_HEADERS = ("content-encoding", "content-length", "transfer-encoding")

    def __init__(self, client: OutboundClient, timeout: float) -> None:
        self._client = client
        self._timeout = timeout

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        try:
            result = await self._client.fetch(
                str(request.url),
                method=request.method,
                headers=dict(request.headers),
                content=body or None,
                timeout=self._timeout,
                max_bytes=MAX_ANSWER_BYTES,
                follow_redirects=False,
            )
        except FetchError as exc:
            if exc.kind == ErrorKind.TIMEOUT:
                raise httpx.ReadTimeout(exc.message, request=request) from exc
            raise httpx.ConnectError(exc.message, request=request) from exc
        # The body is decoded already: its transfer headers no longer apply.
        headers = [
            (name, value)
            for name, value in result.headers.multi_items()
            if name.lower() not in self._HOP_HEADERS
        ]
        return httpx.Response(
            result.status_code, headers=headers, content=result.content, request=request
        )

    async def aclose(self) -> None:
        await self._client.aclose()


# --- Answers ------------------------------------------------------------------------


def parse_json(
    text: str,
    schema: Mapping[str, Any] | None = None,
    *,
    shown: str = "",
    most_chars: int | None = None,
) -> Any:
    """The model's JSON object: the whole text, or an object inside prose or
    a code fence. A model may quote an object (from the page, say) before its
    own answer, so the last object wins, and with a `schema` the last one that
    fits it (else the last one, for its error). When several fit, one equal
    to an object in `shown` (what the model was shown: a page can plant an
    answer for it to echo, before or after its own) is passed over for one
    that was not (_shown_in says what counts as equal and how far it looks).
    Objects are looked for in the first `most_chars` characters only (all
    without it). None when there is none."""
    text = text.strip()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # nested past what the parser reads
        pass
    else:
        return value if isinstance(value, dict) else None
    found = _objects_in(text if most_chars is None else text[:most_chars])
    if schema is not None:
        fitting = [value for value in found if schema_error(value, schema) is None]
        if len(fitting) > 1 and shown:
            copied = _shown_in(fitting, shown)
            fitting = [v for i, v in enumerate(fitting) if i not in copied] or fitting
        if fitting:
            return fitting[-1]
    return found[-1] if found else None


def _shown_in(answers: list[dict[str, Any]], shown: str) -> set[int]:
    """The indexes of `answers` equal to an object in `shown`, at any depth:
    compared as parsed values (keys in any order, white space in strings
    aside), never as text. A diff shows each line of an object spread over
    several after its "+", "-" or " ", so its new side and its old side are
    read without them too, and the text as it is. Objects longer than
    SHOWN_OBJECT_CHARS are not read, nor any once SHOWN_READ_BUDGET is spent
    on tries that found none."""
    lines = shown.split("\n")
    new = [x[1:] if x[:1] in ("+", " ") else x for x in lines if x[:1] != "-"]
    old = [x[1:] if x[:1] in ("-", " ") else x for x in lines if x[:1] != "+"]
    by_keys: dict[frozenset[str], list[int]] = {}
    for index, answer in enumerate(answers):
        by_keys.setdefault(frozenset(answer), []).append(index)
    copied: set[int] = set()
    for text in (shown, "\n".join(new), "\n".join(old)):
        stack: list[Any] = _shown_objects(text)
        while stack:
            value = stack.pop()
            if isinstance(value, list):
                stack.extend(value)
            elif isinstance(value, dict):
                stack.extend(value.values())
                for index in by_keys.get(frozenset(value), ()):
                    if index not in copied and _same(value, answers[index]):
                        copied.add(index)
    return copied


def _shown_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in `text`, outermost only, within the bounds of
    _shown_in: cheap enough for a whole page."""
    decoder = json.JSONDecoder()
    found = []
    spent = 0
    match = _OBJECT_START.search(text)
    while match and spent < SHOWN_READ_BUDGET:
        start = match.start()
        window = text[start : start + SHOWN_OBJECT_CHARS]
        try:
            value, end = decoder.raw_decode(window)
        except RecursionError:
            spent += len(window)
        except ValueError as exc:
            spent += max(getattr(exc, "pos", len(window)), 16)
        else:
            found.append(value)
            match = _OBJECT_START.search(text, start + end)
            continue
        match = _OBJECT_START.search(text, start + 1)
    return found


def _same(shown: Any, answer: Any) -> bool:
    """Whether two parsed JSON values are equal, white space in strings
    aside; true is not 1, nor 1.0 the number 1 (Python's == says they are)."""
    if type(shown) is not type(answer):
        return False
    if isinstance(answer, str):
        return "".join(shown.split()) == "".join(answer.split())
    if isinstance(answer, list):
        return len(shown) == len(answer) and all(map(_same, shown, answer))
    if isinstance(answer, dict):
        return shown.keys() == answer.keys() and all(
            _same(shown[key], answer[key]) for key in answer
        )
    return shown == answer


def _storable(value: Any) -> Any:
    """`value` with NUL characters and lone surrogates (JSON's "\ud800")
    left out of its strings and keys: PostgreSQL's text and jsonb hold
    neither."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("", value)
    if isinstance(value, list):
        return [_storable(item) for item in value]
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    return value


def _objects_in(text: str) -> list[dict[str, Any]]:
    """The JSON objects in `text`, outermost only, in order."""
    decoder = json.JSONDecoder()
    found = []
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except RecursionError:
            # Nested past what the parser reads: so is every object inside,
            # and trying each of them would take the parser's limit squared.
            break
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", end)
    return found


def _raised_in(package: Any, exc: BaseException) -> bool:
    """Whether `exc` was raised inside `package` (or in what it called)."""
    folder = os.path.dirname(package.__file__)
    return any(
        frame.filename.startswith(folder + os.sep)
        for frame in traceback.extract_tb(exc.__traceback__)
    )


def schema_error(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Why `value` does not fit `schema` (one short sentence), or None.

    Raises LLMError when the schema refers to a document outside itself: no
    answer can ever fit it, so asking the model again would only cost tries."""
    import jsonschema  # here: a worker without a model never loads it
    import referencing
    import referencing.exceptions

    # An empty registry: a reference the schema cannot resolve inside itself is
    # an error, never a fetch (jsonschema would otherwise retrieve remote
    # documents with urllib, past the address policy). Saved schemas are
    # refused such references; this guards schemas saved before that rule.
    validator_class = patterns.validator_class(schema)
    validator = validator_class(schema, registry=referencing.Registry())
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except referencing.exceptions.Unresolvable as exc:
        raise LLMError(
            f"The JSON schema refers to {str(exc.ref)[:200]!r}, which is not inside "
            "it (references to other documents are never fetched)."
        ) from None
    except (ValueError, AttributeError, TypeError) as exc:
        # An address the validator cannot read (a pointer into a list by a
        # word, an $id that is no string): refused when saved, where the
        # rules can tell which; this guards those saved before. Any other
        # such error (one of ours, a keyword of the wrong type) is raised as
        # it is, never blamed on the schema's addresses.
        unusable = rules.schema_dangling_reference_error(schema)
        if unusable is None and not _raised_in(referencing, exc):
            raise
        raise LLMError(
            f"The JSON schema cannot be used: {unusable or rules.SCHEMA_ID_UNREADABLE}"
        ) from None
    except RecursionError:
        # Saved schemas are refused such loops; this guards those saved before.
        unusable = rules.schema_reference_loop_error(schema)
        if unusable is not None:
            raise LLMError(f"The JSON schema cannot be used: {unusable}") from None
        return "the answer: nested too deeply to be checked against the schema"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "the answer"
    return f"{where}: {_middle_cut(error.message, 200)}"


def _middle_cut(text: str, limit: int) -> str:
    """`text` within `limit` characters, its middle left out: a validator's
    message starts with the value (a long string, say) and ends with why."""
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return f"{text[:keep]}…{text[-keep:]}"


def _instructions(system: str, schema: Mapping[str, Any]) -> str:
    shape = json.dumps(schema, separators=(",", ":"))
    return (
        f"{system}\n\nAnswer with one JSON object and nothing else. It must match "
        f"this JSON Schema exactly (no other keys):\n{shape}"
    )


class _ModeRefused(Exception):
    """The server answered 400 to a structured-output mode."""


class _CapRefused(Exception):
    """The server answered 400 naming the parameter that caps the answer."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _TemperatureRefused(Exception):
    """The server answered 400 naming `temperature` (OpenAI's reasoning
    models take only their default)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Attempt(Exception):
    """One try failed; another may succeed, `wait` seconds later at the
    earliest when the endpoint said so."""

    def __init__(self, message: str, wait: float = 0.0) -> None:
        super().__init__(message)
        self.wait = wait


# --- The client -----------------------------------------------------------------------

# Per endpoint, model, kind of request and schema, the mode the server
# accepted: later calls start there. By schema, because a strict mode may
# refuse one schema (a keyword it does not support) and take another: one
# monitor's extraction schema must not move every other one to a weaker mode.
# Only a fallback is kept (a schema answered in its first mode needs nothing),
# and only the most recently used: a worker lives for weeks and every edit of
# a schema is a schema of its own.
_modes: OrderedDict[tuple[str, str, str, str], Mode] = OrderedDict()
MODES_REMEMBERED = 256


def _remembered_mode(key: tuple[str, str, str, str], first: Mode) -> Mode:
    mode = _modes.get(key)
    if mode is None:
        return first
    _modes.move_to_end(key)
    return max(mode, first)


def _remember_mode(key: tuple[str, str, str, str], mode: Mode, first: Mode) -> None:
    if mode <= first:
        return
    _modes[key] = max(_modes.get(key, first), mode)
    _modes.move_to_end(key)
    while len(_modes) > MODES_REMEMBERED:
        _modes.popitem(last=False)


# The two names of the answer's cap, the one every server reads first.
CAP_NAMES = ("max_tokens", "max_completion_tokens")
# Per endpoint and model, the name it answered to when that was not the
# first: a worker has one endpoint configured, so this stays small.
_cap_names: dict[tuple[str, str], str] = {}
# The endpoints and models that answered once asked without `temperature`
# (OpenAI's reasoning models take only their default): small for the same reason.
_no_temperature: set[tuple[str, str]] = set()


def _other_cap_name(name: str) -> str:
    return CAP_NAMES[1 - CAP_NAMES.index(name)]


def _names(exc: openai.APIStatusError, names: Sequence[str]) -> bool:
    """Whether a refusal is about one of the parameters `names` (the cap's,
    or temperature), not the answer's format: OpenAI names the parameter in
    `param`; servers that do not, in their message. The body itself is not
    searched: some servers quote the whole request back."""
    param = getattr(exc, "param", None)
    if isinstance(param, str) and param:
        return param in names
    words = service_words(exc.response.content)
    return any(name in words for name in names)


def _schema_hash(schema: Mapping[str, Any]) -> str:
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class LLM:
    """An OpenAI-compatible model for one event loop (one batch of a check).

    `async with LLM() as llm: answer = await llm.ask(...)`.
    """

    def __init__(
        self, config: LLMConfig | None = None, *, resolver: Resolver | None = None
    ) -> None:
        # Imported here: the package and its models are heavy in every worker
        # process, and only a server with a model configured uses it.
        import openai

        self.config = config or LLMConfig.from_settings()
        door = OutboundClient(
            resolver=resolver,
            concurrency=CONCURRENCY,
            per_host_concurrency=CONCURRENCY,
            private_hosts=frozenset({self.config.host}),
        )
        self._client = openai.AsyncOpenAI(
            base_url=self.config.base_url,
            # Local servers need no key; the package insists on one.
            api_key=self.config.api_key or "not-needed",
            max_retries=0,  # ours: TRIES, with mode fallbacks
            timeout=self.config.timeout,
            http_client=httpx.AsyncClient(
                transport=DoorTransport(door, self.config.timeout), trust_env=False
            ),
        )
        self._slots = asyncio.Semaphore(CONCURRENCY)
        self._failed_calls = 0
        # Set when the endpoint asked for a wait longer than a check waits:
        # (until when on the monotonic clock, why).
        self._busy: tuple[float, str] | None = None
        self.calls = 0  # requests sent, for tests and logs
        self.used: dict[str, Use] = {}  # by kind of call (ask's `name`)

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.close()

    def take_used(self) -> dict[str, Use]:
        """What the calls used since the last time, by kind of call."""
        used, self.used = self.used, {}
        return used

    async def ask(
        self,
        *,
        name: str,
        schema: Mapping[str, Any],
        system: str,
        user: str,
        strict: bool = True,
        max_output_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The model's answer to (system, user) as a dict valid against
        `schema`; raises LLMError when no try gave one. `strict` False skips
        JSON-schema mode (a schema it cannot express, such as any object).
        `max_output_tokens` caps the answer below the configured cap."""
        # Saved schemas are refused this; it guards those saved before, ahead
        # of any request: no answer could be checked against them safely.
        if unusable := rules.schema_unevaluated_properties_error(schema):
            raise LLMError(f"The JSON schema cannot be used: {unusable}")
        if self._failed_calls >= GIVE_UP_AFTER_FAILED_CALLS:
            raise LLMError(
                "The AI model did not answer the previous requests of this check, "
                "so it was not asked again."
            )
        if self._busy is not None and time.monotonic() < self._busy[0]:
            raise LLMError(self._busy[1])
        most = self.config.max_output_tokens
        cap = min(max_output_tokens or most, most)
        async with self._slots:
            try:
                answer = await self._tries(name, schema, system, user, strict, cap)
            except _CutOff:
                self._failed_calls = 0  # the endpoint answered
                raise
            except LLMError:
                self._failed_calls += 1
                raise
        self._failed_calls = 0
        return answer

    async def _tries(
        self,
        name: str,
        schema: Mapping[str, Any],
        system: str,
        user: str,
        strict: bool,
        cap: int,
    ) -> dict[str, Any]:
        messages = [
            {"role": "system", "content": _instructions(system, schema)},
            {"role": "user", "content": user},
        ]
        key = (self.config.base_url, self.config.model, name, _schema_hash(schema))
        first = Mode.SCHEMA if strict else Mode.JSON
        mode = _remembered_mode(key, first)
        endpoint = (self.config.base_url, self.config.model)
        cap_name = _cap_names.get(endpoint, CAP_NAMES[0])
        switched = False
        temperature = endpoint not in _no_temperature
        problem = "no answer"
        tries = 0
        while tries < TRIES:
            try:
                text = await self._complete(
                    name, schema, messages, mode, cap_name, cap, temperature
                )
            except _TemperatureRefused as exc:
                if not temperature:  # not sent: cannot be what was refused
                    raise LLMError(exc.message) from None
                temperature = False
                continue  # a refused parameter is not a try
            except _CapRefused as exc:
                if switched:  # both names: the value is what was refused
                    raise LLMError(exc.message) from None
                cap_name, switched = _other_cap_name(cap_name), True
                continue  # a refused name is not a try
            except _ModeRefused:
                mode = Mode(mode + 1)
                continue  # a refused mode is not a try
            except _Attempt as exc:
                problem = str(exc)
                tries += 1
                if exc.wait > LONGEST_WAIT_SECONDS:
                    self._busy = (time.monotonic() + exc.wait, _too_long(exc))
                    raise LLMError(self._busy[1]) from None
                if tries < TRIES:
                    await asyncio.sleep(max(_RETRY_PAUSES[tries - 1], exc.wait))
                continue
            # Remembered only once a mode was answered: a 400 to every mode
            # (an input too long for the model, say) was not about modes.
            _remember_mode(key, mode, first)
            if cap_name == CAP_NAMES[0]:
                _cap_names.pop(endpoint, None)
            else:
                _cap_names[endpoint] = cap_name
            if temperature:
                _no_temperature.discard(endpoint)
            else:
                _no_temperature.add(endpoint)
            try:
                value = _storable(
                    parse_json(
                        text,
                        schema,
                        shown=user,
                        most_chars=cap * ANSWER_CHARS_PER_TOKEN,
                    )
                )
            except RecursionError:  # read, but nested past what Python walks
                value = None
            error = "it was not JSON" if value is None else schema_error(value, schema)
            if error is None:
                return value
            problem = f"the answer did not fit the expected shape ({error})"
            tries += 1
        raise LLMError(
            f"The AI model gave no usable answer after {TRIES} tries: {problem}."
        )

    async def _complete(
        self,
        name: str,
        schema: Mapping[str, Any],
        messages: Sequence[Mapping[str, str]],
        mode: Mode,
        cap_name: str,
        cap: int,
        temperature: bool,
    ) -> str:
        kwargs: dict[str, Any] = {cap_name: cap}
        if temperature:
            kwargs["temperature"] = 0
        if mode == Mode.SCHEMA:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        elif mode == Mode.JSON:
            kwargs["response_format"] = {"type": "json_object"}
        import openai

        self.calls += 1
        try:
            # The door's budget bounds the request; this bounds the whole try
            # (a server that trickles bytes), with a little slack.
            async with asyncio.timeout(self.config.timeout + 5):
                response = await self._client.chat.completions.create(
                    model=self.config.model,
                    messages=messages,  # type: ignore[arg-type]
                    **kwargs,
                )
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if _names(exc, CAP_NAMES):
                raise _CapRefused(_refused(exc)) from exc
            if _names(exc, ("temperature",)):
                raise _TemperatureRefused(_refused(exc)) from exc
            if mode < Mode.PROMPT:
                raise _ModeRefused from exc
            raise LLMError(_refused(exc)) from exc
        except openai.APIStatusError as exc:
            if exc.status_code in _PERMANENT_STATUSES:
                raise LLMError(_refused(exc)) from exc
            raise _busy_or_failed(exc) from exc
        except (openai.APITimeoutError, TimeoutError) as exc:
            raise _Attempt(f"no answer within {self.config.timeout:g} seconds") from exc
        except openai.APIConnectionError as exc:
            cause = _fetch_error(exc)
            if cause is not None and cause.kind == ErrorKind.TOO_LARGE:
                # The endpoint was reached and answered: at temperature 0 the
                # same runaway answer would come again, so it is not retried.
                raise LLMError(
                    f"The AI model's answer was larger than "
                    f"{human_size(MAX_ANSWER_BYTES)}, so it was not read."
                ) from exc
            if cause is not None and cause.kind in _NEVER_RETRIED:
                reason = cause.message.rstrip(".")
                raise LLMError(f"The AI model's endpoint: {reason}.") from exc
            reason = cause.message if cause is not None else "no connection"
            raise _Attempt(f"the endpoint could not be reached ({reason})") from exc
        except (openai.OpenAIError, RecursionError) as exc:
            # RecursionError: a reply nested past what the JSON parser reads.
            raise _Attempt("the answer could not be read") from exc
        # Answered: the endpoint counted it, whatever the answer is worth.
        self.used.setdefault(name, Use()).count(getattr(response, "usage", None))
        return _content(response, cap)


def _busy_or_failed(exc: openai.APIStatusError) -> _Attempt:
    """A try that got an error status, with the wait a busy endpoint asked for."""
    code = exc.status_code
    wait = asked_wait(code, exc.response.headers.get("retry-after"), datetime.now(UTC))
    if wait is None:
        return _Attempt(f"the endpoint answered HTTP {code}")
    return _Attempt(
        f"the endpoint was busy (HTTP {code}) and asked us to wait {wait_words(wait)}",
        wait=wait.total_seconds(),
    )


def _too_long(attempt: _Attempt) -> str:
    return (
        f"The AI model's {str(attempt).removeprefix('the ')} before asking again, "
        "longer than a check waits."
    )


def _fetch_error(exc: BaseException) -> FetchError | None:
    """The door's own error behind an exception of the openai package."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 10:
        if isinstance(current, FetchError):
            return current
        current = current.__cause__ or current.__context__
        seen += 1
    return None


def _content(response: Any, cap: int) -> str:
    try:
        message = response.choices[0].message
        content = message.content
    except (AttributeError, IndexError, TypeError):
        raise _Attempt("the answer could not be read") from None
    if getattr(response.choices[0], "finish_reason", None) == "length" and (
        not isinstance(content, str) or _whole_object(content) is None
    ):
        # Its end is missing, where the model's own verdict comes (an object
        # before the cut may be one quoted from the page). At temperature 0
        # the same answer would come again, at the same cost: not retried.
        raise _CutOff(_cut_off_words(response, cap))
    refusal = getattr(message, "refusal", None)
    if isinstance(refusal, str) and refusal.strip() and not content:
        # OpenAI's models decline in this field, with the content left empty.
        raise _Attempt(f"the model declined to answer ({refusal.strip()[:200]})")
    if not isinstance(content, str) or not content.strip():
        raise _Attempt("the answer was empty")
    return content


def _cut_off_words(response: Any, cap: int) -> str:
    """Why an answer ended early: the cap this request sent, or, when the
    answer reports fewer tokens than that (or none), a limit of the model's
    own, which its server's settings set (a local server's context length)."""
    written = getattr(getattr(response, "usage", None), "completion_tokens", None)
    if _is_count(written) and written >= cap:
        return (
            f"The AI model's answer was too long: it was cut off at the {cap:,} "
            "tokens it may write for this request, so it was not used."
        )
    return (
        "The AI model's answer was too long: the model stopped at a length limit "
        f"of its own, before the {cap:,} tokens it may write for this request, so "
        "it was not used. Its server's settings for the model's context length or "
        "longest answer may need raising."
    )


def _whole_object(text: str) -> dict[str, Any] | None:
    """`text` when it is one whole JSON object, else None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _refused(exc: openai.APIStatusError) -> str:
    hints = {
        401: " Check LLM_API_KEY.",
        403: " Check LLM_API_KEY.",
        404: " Check LLM_BASE_URL and LLM_MODEL.",
    }
    refused = f"The AI model's endpoint refused the request (HTTP {exc.status_code})"
    # Its words say what was wrong with the request (an input longer than the
    # model takes, say); not for a refused key, which they may quote.
    words = service_words(exc.response.content) if exc.status_code not in hints else ""
    return (f"{refused}: {words}." if words else f"{refused}.") + hints.get(
        exc.status_code, ""
    )
