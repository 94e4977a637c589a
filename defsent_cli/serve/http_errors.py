"""The server's errors and their HTTP statuses, in one place (as text-embeddings-inference maps its errors): the
app's own refusals (:class:`ApiError`) and the engine's errors (:data:`ENGINE_ERRORS`: the engine raises them
knowing nothing of HTTP, this table gives each its status, code and headers), every one answered as OpenAI's
error object (:func:`error_body`)."""

from __future__ import annotations

from starlette.requests import ClientDisconnect

from .batcher import QueueFull, Stopping
from .engine import TooLong


class ApiError(Exception):
    def __init__(
        self, status: int, message: str, kind: str = "invalid_request_error", param=None, code=None, headers=None
    ):
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code
        self.headers = headers


def error_body(message: str, kind: str = "invalid_request_error", param=None, code=None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


CLIENT_LEFT = 499  # nginx's "client closed request": counted in the metrics, never sent (nobody is there)


def _too_long(exc: TooLong, param: str) -> ApiError:
    param = param or "input"
    return ApiError(400, f"'{param}'{exc}", param=param, code="context_length_exceeded")


#: The engine's errors as HTTP answers, in one place: exception class -> (the request's field) -> ApiError.
ENGINE_ERRORS = {
    QueueFull: lambda exc, param: ApiError(
        503,
        "the server is busy (its queue is full); retry shortly",
        "server_error",
        code="overloaded",
        headers={"Retry-After": "1"},
    ),
    Stopping: lambda exc, param: ApiError(
        503,
        "the server is stopping and could not answer in time; retry (on another instance)",
        "server_error",
        code="shutting_down",
        headers={"Retry-After": "1", "Connection": "close"},
    ),
    TooLong: _too_long,
    ClientDisconnect: lambda exc, param: ApiError(CLIENT_LEFT, "the client closed the request", code="client_closed"),
}


def engine_error(exc: Exception, param: str | None = None) -> ApiError:
    """The HTTP answer to one of the engine's errors (:data:`ENGINE_ERRORS`)."""
    for kind, answer in ENGINE_ERRORS.items():
        if isinstance(exc, kind):
            return answer(exc, param)
    raise exc
