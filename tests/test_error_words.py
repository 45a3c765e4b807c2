"""A page error as messages to people say it (checks.errors.error_words): the
words of its kind, never the stored text written for programs, which the
dashboard keeps in brackets (plain_error) and the API as `error`."""

from __future__ import annotations

import pytest

from checks.errors import ErrorKind, error_words, is_raw, plain_error

RAW = "httpx.ConnectError: [Errno 111] Connection refused"


@pytest.mark.parametrize("kind", list(ErrorKind))
def test_a_messages_words_for_every_kind_leave_the_stored_text_out(kind):
    code = 418 if kind == ErrorKind.HTTP_4XX else 503
    said = error_words(kind, code, RAW)
    assert "Errno" not in said and "httpx" not in said
    assert said == plain_error(kind, code, "")


def test_the_dashboard_still_shows_the_stored_text_as_the_exact_reason():
    assert plain_error("refused", None, RAW) == (
        f"The site refused the connection. ({RAW})"
    )
    assert error_words("refused", None, RAW) == "The site refused the connection."


def test_a_wait_the_site_asked_for_is_still_said_in_words():
    text = "The page answered HTTP 429 and asked us to wait 2 minutes."
    assert error_words("http_4xx", 429, text) == (
        "The site said we asked too often (HTTP 429)."
        " It asked us to wait 2 minutes before asking again."
    )


def test_a_row_without_a_kind_says_its_text_unless_it_is_raw():
    assert error_words("", None, "Timed out") == "Timed out"
    assert error_words("", None, "<html><h1>502</h1></html>") == (
        "Something went wrong while checking this page."
    )
    assert error_words("", 404, "HTTP 404") == "The page was not found (HTTP 404)."


@pytest.mark.parametrize(
    "text",
    [
        RAW,
        "ReadTimeout: [Errno 110] Connection timed out",
        "builtins.ValueError: bad value",
        "asyncio.exceptions.CancelledError",
    ],
)
def test_an_exceptions_text_is_raw(text):
    assert is_raw(text)


@pytest.mark.parametrize(
    "text",
    [
        "The page took too long to answer.",
        "Web searches are not run: no search provider is configured.",
        "The check took longer than 10 minutes and was stopped.",
    ],
)
def test_plain_sentences_are_not_raw(text):
    assert not is_raw(text)


def test_a_row_without_a_kind_never_says_an_exceptions_text():
    said = error_words("", None, RAW)
    assert said == "Something went wrong while checking this page."


def test_the_dashboard_shows_a_row_without_a_kind_as_stored_even_when_raw():
    assert plain_error("", None, RAW) == RAW
