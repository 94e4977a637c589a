"""The HTTP API of ``defsent serve`` (FastAPI on uvicorn; docs/serve.md).

- ``POST /v1/embeddings``: OpenAI's embeddings API (``input`` a string or a list of strings, ``encoding_format``
  float or base64, ``dimensions`` the leading ones kept as ``encode --dims`` keeps them, ``usage`` token counts,
  OpenAI's error object and status codes);
- ``POST /v1/lookup`` (the reverse dictionary over the served bank) and ``GET /v1/define`` (an entry's senses):
  ``dictionary_routes.py``; ``POST /v1/search`` (the served index);
- ``GET /health``, ``GET /metrics`` (Prometheus), ``GET /v1/models``, and ``GET /``: the page.

Every error is a JSON object ``{"error": {"message", "type", "param", "code"}}``, never a traceback: 400 a bad
request, a text over ``max_chars`` or longer than the model's window (unless ``"truncate": true``), or not valid
Unicode; 401 a wrong API key, 404 an unknown path, model or a collection not served, 413 a body over
``max_body_bytes`` (refused before it is read) or more than ``max_inputs`` texts, 499 (logged in the metrics only) a
client that left, 503 (with ``Retry-After``) a full queue or a server stopping, 500 a failure inside (logged).
The engine's own errors become statuses in one table (:data:`ENGINE_ERRORS`).

While the server drains (SIGTERM: ``server.py``) every response says ``Connection: close``, so a keep-alive client
opens a new connection for its next request instead of writing into one that is about to close.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import secrets
import time
from dataclasses import dataclass, field

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ..space.dims import dims_problem, leading
from .batcher import QueueFull, Stopping
from .dictionary_routes import DictionaryRoutes
from .engine import Engine, TooLong
from .http_errors import CLIENT_LEFT, ENGINE_ERRORS, ApiError, engine_error, error_body
from .page import page_html

logger = logging.getLogger("defsent")


@dataclass
class Security:
    api_key: str | None = None
    cors_origins: list[str] = field(default_factory=list)


def json_response(content: dict) -> Response:
    """A JSON answer written by orjson (numpy arrays as JSON arrays of their float32 values, shortest form), not
    through FastAPI's encoder, which walks every float of a response in Python."""
    import orjson

    return Response(orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")


def error_response(exc: ApiError, headers: dict | None = None) -> JSONResponse:
    headers = headers or exc.headers
    return JSONResponse(error_body(exc.message, exc.kind, exc.param, exc.code), exc.status, headers=headers)


class Gate:
    """Pure ASGI middleware: the API key (``Authorization: Bearer KEY`` on /v1/* and /metrics), ``Connection: close``
    while the server drains, and the metrics of every request (route, status, latency, requests in flight)."""

    def __init__(self, app, engine: Engine, api_key: str | None):
        self.app, self.engine, self.api_key = app, engine, api_key

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, start, status = scope["path"], time.perf_counter(), {"code": 500}
        metrics = self.engine.metrics

        async def sending(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                if status["code"] == CLIENT_LEFT:
                    return  # nobody to answer: counted, not sent
                if self.engine.draining:
                    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
            elif status["code"] == CLIENT_LEFT:
                return
            await send(message)

        metrics.in_flight += 1
        try:
            if self.api_key and (path.startswith("/v1/") or path == "/metrics") and not self._authorised(scope):
                bad = ApiError(
                    401, "Incorrect API key provided: pass it as 'Authorization: Bearer KEY'.", code="invalid_api_key"
                )
                await error_response(bad, {"WWW-Authenticate": "Bearer"})(scope, receive, sending)
                return
            await self.app(scope, receive, sending)
        except Exception:  # noqa: BLE001 - answered 500 and logged in one line (create_app's _failure) already
            if status["code"] != 500:
                raise
        finally:
            metrics.in_flight -= 1
            metrics.observe_request(path, status["code"], time.perf_counter() - start)

    def _authorised(self, scope) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(given.strip().encode(), self.api_key.encode())


async def _until_disconnect(request: Request) -> None:
    """Returns when the client has gone (the request body was read already)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def answer_or_leave(request: Request, future: asyncio.Future):
    """The batcher's answer, or (the client gone first) the future cancelled, freeing its place in the queue."""
    watch = asyncio.ensure_future(_until_disconnect(request))
    try:
        done, _ = await asyncio.wait({future, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
    if future not in done:
        future.cancel()
        raise ClientDisconnect
    return future.result()


async def read_body(request: Request, cap: int) -> bytes:
    """The request's body, refused (413) as soon as it passes ``cap`` bytes: by its Content-Length before a byte is
    read, else while it streams in, so an oversized body is never held whole."""
    too_big = ApiError(
        413,
        f"the request body is over {cap:,} bytes, the most this server reads (--max-body-bytes)",
        param=None,
        code="request_too_large",
        headers={"Connection": "close"},  # the rest of the body is not read: this connection ends here
    )
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: Request, cap: int) -> dict:
    raw = await read_body(request, cap)
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError, RecursionError):
        raise ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def flag(body: dict, name: str) -> bool:
    """An optional boolean field of the body (absent: false)."""
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise ApiError(400, f"'{name}' must be true or false", param=name)
    return value


def texts_of(body: dict, name: str, engine: Engine) -> list[str]:
    """``body[name]``: a string or a non-empty list of strings, within the limits (413: too many; 400: too long)."""
    limits = engine.limits
    if name not in body:
        raise ApiError(400, f"'{name}' is a required property", param=name)
    value = body[name]
    single = isinstance(value, str)
    items = [value] if single else value
    if not isinstance(items, list) or not items:
        raise ApiError(400, f"'{name}' must be a string or a non-empty array of strings", param=name)
    if not all(isinstance(item, str) for item in items):
        raise ApiError(
            400, f"'{name}' must be a string or an array of strings (token arrays are not supported)", param=name
        )
    if len(items) > limits.max_inputs:
        raise ApiError(
            413,
            f"'{name}' has {len(items)} items; this server takes at most {limits.max_inputs} per request (--max-inputs)",
            param=name,
            code="too_many_inputs",
        )
    for number, item in enumerate(items):
        if not item.strip():
            raise ApiError(400, f"'{name}'[{number}] is empty", param=name)
        try:
            item.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ApiError(
                400,
                f"'{name}'[{number}] is not valid Unicode (a lone surrogate, {item[exc.start]!r}, at character "
                f"{exc.start}): send text, each \\uD800-\\uDFFF escape in a pair",
                param=name,
                code="invalid_text",
            ) from None
        if len(item) > limits.max_chars:
            raise ApiError(
                400,
                f"'{name}'[{number}] has {len(item)} characters; this server takes at most {limits.max_chars} "
                "(--max-chars)",
                param=name,
                code="input_too_long",
            )
    return items


class Routes(DictionaryRoutes):
    """The routes of one server, over its engine (``create_app`` registers each; the reverse dictionary's are
    :class:`~.dictionary_routes.DictionaryRoutes`)."""

    def __init__(self, engine: Engine, security: Security):
        self.engine, self.security = engine, security

    async def batched(self, name: str, request: Request, texts: list[str]):
        """The batcher's results for ``texts``; the engine's refusals as their HTTP answers (the full queue
        counted)."""
        try:
            future = self.engine.batchers[name].submit(texts)
        except QueueFull as exc:
            self.engine.metrics.rejected += 1
            raise engine_error(exc) from None
        return await self.wait(request, future)

    async def wait(self, request: Request, future):
        try:
            return await answer_or_leave(request, future)
        except Stopping as exc:
            raise engine_error(exc) from None

    async def measured(self, texts: list[str], body: dict, param: str) -> list[list[int]]:
        """Each text's token ids, every text checked against the model's window (unless ``truncate``)."""
        try:
            return await self.engine.measured(texts, flag(body, "truncate"))
        except TooLong as exc:
            raise engine_error(exc, param) from None

    async def embeddings(self, request: Request):
        engine = self.engine
        body = await read_json(request, engine.limits.max_body_bytes)
        texts = texts_of(body, "input", engine)
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise ApiError(400, f"encoding_format must be 'float' or 'base64', not {fmt!r}", param="encoding_format")
        dimensions = body.get("dimensions")
        wrong = None if dimensions is None else dims_problem(dimensions, engine.dim)
        if wrong is not None:  # checked before the texts join a batch: a bad request fails alone
            raise ApiError(400, f"'dimensions' {json.dumps(dimensions)[:40]} {wrong}", param="dimensions")
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            raise ApiError(400, "'model' must be a string", param="model")
        ids = await self.measured(texts, body, "input")
        vectors = await self.batched("embeddings", request, ids)
        # the batch is encoded at full width; each request keeps its leading dims as encode --dims does
        vectors = np.ascontiguousarray(leading(vectors, dimensions, engine.encoder.normalized), dtype="<f4")
        if fmt == "base64":
            rows = [base64.b64encode(row.tobytes()).decode("ascii") for row in vectors]
        else:
            rows = vectors  # written by orjson from the array: no Python float per number
        data = [{"object": "embedding", "index": number, "embedding": row} for number, row in enumerate(rows)]
        tokens = sum(map(len, ids))
        engine.metrics.count_texts(0, tokens)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return json_response({"object": "list", "data": data, "model": engine.model_name, "usage": usage})

    async def request_queries(self, request: Request) -> tuple[dict, list[str]]:
        """The request's JSON body and its ``query`` texts, within the limits."""
        body = await read_json(request, self.engine.limits.max_body_bytes)
        return body, texts_of(body, "query", self.engine)

    def k_of(self, body: dict) -> int:
        k = body.get("k", 10)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= self.engine.limits.max_k:
            raise ApiError(400, f"'k' must be a whole number from 1 to {self.engine.limits.max_k}", param="k")
        return k

    def check_dimensions(self, body: dict, collection) -> None:
        """A search's ``dimensions``: absent, or the width its index or bank is searched at (the width it was built
        at, cut or not, which the answer's ``dimensions`` states); another is a 400, not ignored."""
        dimensions = body.get("dimensions")
        if dimensions is None or (not isinstance(dimensions, bool) and dimensions == collection.width):
            return
        build = "defsent index" if collection.kind == "index" else "defsent embed-entries"
        raise ApiError(
            400,
            f"'dimensions' {json.dumps(dimensions)[:40]}: the served {collection.kind} is searched at its "
            f"{collection.width} dimensions (give {collection.width}, or leave it out); for smaller vectors serve one "
            f"built with {build} --dims N",
            param="dimensions",
        )

    async def search(self, request: Request):
        return await self.search_in("search", request)

    async def search_in(self, which: str, request: Request):
        engine = self.engine
        collection = engine.bank if which == "lookup" else engine.index
        if collection is None:
            served = "no bank is served (start the server with --bank BANK.h5)"
            raise ApiError(404, served if which == "lookup" else served.replace("bank", "index"), "not_found_error")
        body = await read_json(request, engine.limits.max_body_bytes)
        queries = texts_of(body, "query", engine)
        k = self.k_of(body)
        self.check_dimensions(body, collection)
        await self.measured(queries, body, "query")
        try:
            found = await engine.search(which, queries, k, lambda future: self.wait(request, future))
        except QueueFull as exc:
            engine.metrics.rejected += 1
            raise engine_error(exc) from None
        rows = [{"query": q, "results": hits} for q, hits in zip(queries, found, strict=True)]
        head = {"object": "list", "kind": collection.kind, "similarity": collection.score_kind}
        if collection.cut is not None:  # an index or a bank built with --dims: the queries cut to its width
            head["dimensions"] = collection.cut
        return {**head, "search": collection.search_kind, "data": rows}

    def model_card(self) -> dict:
        engine = self.engine
        return {"id": engine.model_name, "object": "model", "created": engine.created, "owned_by": "defsent"}

    async def models(self):
        return {"object": "list", "data": [self.model_card()]}

    async def model(self, model_id: str):
        if model_id != self.engine.model_name:
            raise ApiError(
                404,
                f"The model '{model_id}' does not exist: this server serves '{self.engine.model_name}'",
                param="model",
                code="model_not_found",
            )
        return self.model_card()

    async def health(self):
        engine = self.engine
        return {
            "status": "ok",
            "model": engine.model_name,
            "dim": engine.dim,
            "bank": engine.bank is not None,
            "index": engine.index is not None,
            "auth": bool(self.security.api_key),
            "queue_depth": engine.queue_depth(),
        }

    async def metrics(self):
        text = self.engine.metrics.render()
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def page(self):
        from ..search.reverse import has_pos

        engine = self.engine
        html = page_html(
            engine.bank is not None,
            engine.index is not None,
            bool(self.security.api_key),
            engine.model_name,
            definitions=engine.bank is None or bool(engine.bank.definitions),
            pos=engine.bank is not None and has_pos(engine.bank),
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    async def favicon(self):
        return Response(status_code=204)

    #: (method, path, route) of every route
    TABLE = (
        ("POST", "/v1/embeddings", "embeddings"),
        ("POST", "/v1/lookup", "lookup"),
        ("POST", "/v1/search", "search"),
        ("GET", "/v1/define", "define"),
        ("GET", "/v1/models", "models"),
        ("GET", "/v1/models/{model_id:path}", "model"),
        ("GET", "/health", "health"),
        ("GET", "/metrics", "metrics"),
        ("GET", "/", "page"),
        ("GET", "/favicon.ico", "favicon"),
    )


def handle_errors(app: FastAPI) -> None:
    """Every error as OpenAI's error object: ours (:class:`ApiError`), the engine's (:data:`ENGINE_ERRORS`),
    Starlette's (an unknown path or method) and any other (500, logged in one line)."""

    async def api_error(request, exc: ApiError):
        return error_response(exc)

    async def http_error(request, exc: StarletteHTTPException):
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        message = f"no route {request.method} {request.url.path}" if exc.status_code in (404, 405) else str(exc.detail)
        return JSONResponse(error_body(message, kind), exc.status_code)

    async def from_engine(request, exc: Exception):
        return error_response(engine_error(exc))

    async def failure(request, exc: Exception):
        logger.warning(f"{request.method} {request.url.path} failed: {type(exc).__name__}: {exc}")
        return JSONResponse(error_body("the server failed on this request; see its log", "server_error"), 500)

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    for kind in ENGINE_ERRORS:
        app.add_exception_handler(kind, from_engine)
    app.add_exception_handler(Exception, failure)


def create_app(engine: Engine, security: Security | None = None):
    """The ASGI app of ``defsent serve``: the routes, the error handlers, the gate (key, metrics, drain) and CORS
    where asked."""
    security = security or Security()

    @contextlib.asynccontextmanager
    async def lifespan(app):
        engine.start()
        try:
            yield
        finally:
            await engine.stop()

    app = FastAPI(title="defsent", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    handle_errors(app)
    routes = Routes(engine, security)
    for method, path, name in Routes.TABLE:
        app.add_api_route(path, getattr(routes, name), methods=[method])
    wrapped = Gate(app, engine, security.api_key)
    if security.cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        return CORSMiddleware(
            wrapped,
            allow_origins=security.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    return wrapped
