"""The reverse dictionary's routes of ``defsent serve`` (a part of :class:`~.app.Routes`):

- ``POST /v1/lookup``: each query parsed (``search/query_syntax.py``: ``pos:noun``, ``a baby pig:p*``, a pattern
  alone; the body's ``pos`` and ``pattern`` fields apply to every query), filtered before the top ``k``, synonyms
  grouped (``search/reverse.py``); a part of speech asked of a bank without them is a 400 saying so;
- ``GET /v1/define?word=``: every sense of an entry with its part of speech (404: no such entry).
"""

from __future__ import annotations

from starlette.requests import Request

from .batcher import QueueFull
from .http_errors import ApiError, engine_error


class DictionaryRoutes:
    """``lookup`` and ``define`` over ``self.engine``'s bank (the request's body read by ``Routes.request_queries``,
    ``k`` by ``Routes.k_of``, ``dimensions`` by ``Routes.check_dimensions``)."""

    async def lookup(self, request: Request):
        """The reverse dictionary: each query parsed (``pos:``, a pattern; the body's ``pos`` and ``pattern`` fields
        apply to every query), filtered before the top k, synonyms grouped (``search/reverse.py``)."""
        from ..search.query_syntax import parse_query
        from ..search.reverse import has_pos, no_pos_error

        engine = self.engine
        if engine.bank is None:
            raise ApiError(404, "no bank is served (start the server with --bank BANK.h5)", "not_found_error")
        body, queries = await self.request_queries(request)
        k = self.k_of(body)
        self.check_dimensions(body, engine.bank)
        fields = {name: body.get(name) for name in ("pos", "pattern")}
        for name, value in fields.items():
            if value is not None and not isinstance(value, str):
                raise ApiError(400, f"'{name}' must be a string", param=name)
        try:
            parsed = [parse_query(query, fields["pos"] or None, fields["pattern"] or None) for query in queries]
        except ValueError as exc:
            raise ApiError(400, str(exc), param="pattern" if "pattern" in str(exc) else "pos") from None
        if any(query.pos for query in parsed) and not has_pos(engine.bank):
            raise ApiError(400, str(no_pos_error(engine.bank.path)), param="pos", code="no_parts_of_speech")
        texts = [query.text for query in parsed if query.text]
        if texts:
            await self.measured(texts, body, "query")
        try:
            found = await engine.lookup(parsed, k, lambda future: self.wait(request, future))
        except QueueFull as exc:
            engine.metrics.rejected += 1
            raise engine_error(exc) from None
        rows = [{"query": q, "results": hits} for q, hits in zip(queries, found, strict=True)]
        head = {"object": "list", "kind": "bank", "similarity": engine.bank.score_kind}
        if engine.bank.cut is not None:
            head["dimensions"] = engine.bank.cut
        return {**head, "search": engine.bank.search_kind, "data": rows}

    async def define(self, request: Request):
        """A forward lookup: every sense of ``?word=`` with its part of speech (the page's links)."""
        from ..errors import DefsentError
        from ..search.reverse import senses_of

        if self.engine.bank is None:
            raise ApiError(404, "no bank is served (start the server with --bank BANK.h5)", "not_found_error")
        word = request.query_params.get("word", "")
        if not word.strip():
            raise ApiError(400, "'word' is required: /v1/define?word=piglet", param="word")
        try:
            return {"object": "definition", **senses_of(self.engine.bank.senses, word, "the served bank")}
        except DefsentError as exc:
            raise ApiError(404, str(exc), "not_found_error", param="word") from None
