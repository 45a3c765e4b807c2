"""Every API failure leaves in the contract's envelope:
{"success": false, "error": "...", "code": "...", "details"?: [...]}.
Every error has a `code` a program can branch on (Firecrawl leaves it out of
some; the README promises it on all). Nothing internal (tracebacks, SQL,
class names) ever reaches the client."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from monitors.wire.errors import flatten_errors

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error with a chosen status, message and code, plus optional extra
    fields."""

    def __init__(self, message: str, status_code: int, code: str, **extra: Any):
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.code = code
        self.extra = extra


def not_found(what: str = "Monitor") -> ApiError:
    return ApiError(f"{what} not found", status.HTTP_404_NOT_FOUND, "NOT_FOUND")


# A service Pagewatch needs (its database, its task queue) is down for a
# moment: a 503 that says which and when to try again, never a 500. Web
# processes reconnect by themselves once it is back.
DATABASE_UNAVAILABLE = "The database is not reachable right now. Try again in a moment."
RETRY_UNAVAILABLE_AFTER = 10  # seconds, in Retry-After


def service_unavailable(message: str = DATABASE_UNAVAILABLE) -> ApiError:
    return ApiError(message, status.HTTP_503_SERVICE_UNAVAILABLE, "SERVICE_UNAVAILABLE")


def is_unavailable(exc: BaseException | None) -> bool:
    """Whether `exc` says the database could not be reached (connection
    refused or lost), rather than that a query was wrong."""
    return isinstance(exc, OperationalError | InterfaceError)


def format_path(path: list[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _body(message: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"success": False, "error": message, "code": code, **extra}


_STATUS_CODES = {
    400: "BAD_REQUEST",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def _where(context: dict) -> str:
    request = context.get("request")
    if request is None:
        return "(no request)"
    return f"{request.method} {request.path}"


def exception_handler(exc: Exception, context: dict) -> Response:
    if is_unavailable(exc):
        # One line: the outage is the news, not this request's stack.
        logger.warning("Database unreachable: %s: %s", _where(context), exc)
        exc = service_unavailable()
    for handled, answer in _ANSWERS:
        if isinstance(exc, handled):
            return answer(exc, context)
    logger.exception("Unhandled API error", exc_info=exc)
    return Response(
        _body("An unexpected error occurred.", "UNKNOWN_ERROR"),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def _api_error(exc: ApiError, context: dict) -> Response:
    headers = {}
    if exc.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
        headers["Retry-After"] = str(RETRY_UNAVAILABLE_AFTER)
    return Response(
        _body(exc.message, exc.code, **exc.extra),
        status=exc.status_code,
        headers=headers,
    )


def _invalid(exc: exceptions.ValidationError, context: dict) -> Response:
    issues = flatten_errors(exc.detail)
    first = issues[0] if issues else {"path": [], "message": "Bad Request"}
    where = format_path(first["path"])
    message = f"{where}: {first['message']}" if where else first["message"]
    return Response(
        _body(message, "BAD_REQUEST", details=issues),
        status=status.HTTP_400_BAD_REQUEST,
    )


def _nested_too_deeply(exc: RecursionError, context: dict) -> Response:
    # Only a request body can nest without bound here: the JSON parser gives
    # up on `[[[[...` thousands deep (well inside the size limit) this way.
    # One line: the traceback would be thousands of frames of the parser.
    logger.warning("Request body nested too deeply: %s", _where(context))
    return Response(
        _body("Request body is nested too deeply.", "BAD_REQUEST_INVALID_JSON"),
        status=status.HTTP_400_BAD_REQUEST,
    )


def _not_json(exc: exceptions.ParseError, context: dict) -> Response:
    return Response(
        _body("Request body is not valid JSON.", "BAD_REQUEST_INVALID_JSON"),
        status=status.HTTP_400_BAD_REQUEST,
    )


def _too_large(exc: RequestDataTooBig, context: dict) -> Response:
    return Response(
        _body("Request body is too large.", "PAYLOAD_TOO_LARGE"),
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    )


def _not_found(exc: Http404, context: dict) -> Response:
    return Response(_body("Not found", "NOT_FOUND"), status=status.HTTP_404_NOT_FOUND)


def _unauthorized(exc: exceptions.APIException, context: dict) -> Response:
    message = str(exc.detail)
    if isinstance(exc, exceptions.NotAuthenticated):
        message = "Unauthorized: missing 'Authorization: Bearer <API key>' header."
    return Response(
        _body(message, "UNAUTHORIZED"),
        status=status.HTTP_401_UNAUTHORIZED,
        headers={"WWW-Authenticate": "Bearer"},
    )


def _throttled(exc: exceptions.Throttled, context: dict) -> Response:
    wait = int(exc.wait or 1)
    return Response(
        _body(f"Rate limit exceeded. Retry after {wait} seconds.", "RATE_LIMITED"),
        status=status.HTTP_429_TOO_MANY_REQUESTS,
        headers={"Retry-After": str(max(wait, 1))},
    )


def _not_json_media(exc: exceptions.UnsupportedMediaType, context: dict) -> Response:
    # DRF says 'Unsupported media type "" in request.': say what to send
    # instead, from the parsers of the view that refused it.
    view = context.get("view")
    parsers = getattr(view, "parser_classes", None) or []
    others = [p.media_type for p in parsers if p.media_type != "application/json"]
    accepted = "".join(f", or as {media_type}" for media_type in others)
    given = getattr(context.get("request"), "content_type", "") or ""
    had = f'Content-Type "{given[:100]}"' if given else "no Content-Type"
    return Response(
        _body(
            "Send the request body as JSON, with the header Content-Type: "
            f"application/json{accepted} (this request had {had}).",
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        status=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
    )


def _other_api_exception(exc: exceptions.APIException, context: dict) -> Response:
    code = _STATUS_CODES.get(exc.status_code) or str(exc.default_code).upper()
    return Response(_body(str(exc.detail), code), status=exc.status_code)


# The first entry whose type matches answers; DRF's own exceptions come before
# their base class, APIException.
_ANSWERS: tuple[tuple[Any, Callable[[Any, dict], Response]], ...] = (
    (ApiError, _api_error),
    (exceptions.ValidationError, _invalid),
    (RecursionError, _nested_too_deeply),
    (exceptions.ParseError, _not_json),
    (RequestDataTooBig, _too_large),
    (Http404, _not_found),
    (exceptions.NotAuthenticated | exceptions.AuthenticationFailed, _unauthorized),
    (exceptions.Throttled, _throttled),
    (exceptions.UnsupportedMediaType, _not_json_media),
    (exceptions.APIException, _other_api_exception),
)


def json_not_found(request: Any, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(_body("Not found", "NOT_FOUND"), status=404)


def json_bad_request(request: Any, exception: Exception | None = None) -> JsonResponse:
    # Django's own 400s, before any view: a Host header not in ALLOWED_HOSTS,
    # too many form fields and other SuspiciousOperations.
    return JsonResponse(_body("Bad Request", "BAD_REQUEST"), status=400)


def json_forbidden(request: Any, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(_body("Forbidden", "FORBIDDEN"), status=403)


def json_server_error(request: Any) -> JsonResponse:
    return JsonResponse(
        _body("An unexpected error occurred.", "UNKNOWN_ERROR"), status=500
    )


def json_service_unavailable(request: Any) -> JsonResponse:
    response = JsonResponse(
        _body(DATABASE_UNAVAILABLE, "SERVICE_UNAVAILABLE"), status=503
    )
    response["Retry-After"] = str(RETRY_UNAVAILABLE_AFTER)
    return response
