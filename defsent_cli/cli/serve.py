"""``defsent serve``: the model behind an HTTP API (OpenAI's embeddings, search, the reverse dictionary) and a
page in the browser (docs/serve.md)."""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import Annotated

import typer

from ..console import say
from ..constraints import option_name as opt_name
from ..errors import DefsentError
from ..serve.limits import CONSTRAINTS, HELP, Limits
from . import options as opt
from .boundary import guard, warn_given
from .groups import Group, Values, change, option, takes_groups
from .models import MODEL, PrecisionName, encode_spec, load
from .search_options import ANN_SEARCH, Dictionary, Similarity, SimilarityName

#: serve's limits, batching and drain: serve/limits.py's Limits, one option a field, its default and rule
LIMITS = Group(
    "limits",
    {
        name: option(
            opt_name(name), type=type(getattr(Limits(), name)), help=HELP[name], default=getattr(Limits(), name)
        )
        for name in HELP
    },
    CONSTRAINTS,
)


def model_name(folder: Path) -> str:
    """The name the API reports: a Hub model's id, as the user names it (``-m acme/mini``; the bundled model is
    ``sentence-transformers/all-MiniLM-L6-v2``); else the model folder's name (its parent's for a folder named
    'model')."""
    from ..formats.origin import hub_origin

    origin = hub_origin(folder)
    if origin is not None:
        return origin["hub_id"]
    folder = Path(folder).resolve()
    return folder.parent.name if folder.name == "model" and folder.parent.name else folder.name or str(folder)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the model loads: a port in use is a one-line error at once."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise DefsentError(f"--host {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        why = "the port is in use; pick another with --port" if exc.errno == errno.EADDRINUSE else exc.strerror
        error = DefsentError(f"cannot listen on {host}:{port}: {why}")
        error.exit_code = 1
        raise error from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve_command(
    model: Values = MODEL(
        only=("model", "batch_size", "device", "runtime", "precision"),
        precision=change(
            PrecisionName("auto"),
            help="auto (the fastest here: int8 on ONNX Runtime on a CPU where it is installed, fp16 on a GPU, else "
            "fp32), fp32, tf32, fp16, bf16 or int8 (see encode).",
        ),
    ),
    bank: Annotated[
        Path | None,
        typer.Option("--bank", help="An entry bank (.h5): the reverse dictionary at /v1/lookup and on the page."),
    ] = None,
    index: Annotated[
        Path | None, typer.Option("--index", help="A text index (defsent index): /v1/search and the search page.")
    ] = None,
    dictionary: Dictionary = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface; mind --api-key).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="DEFSENT_API_KEY",
            help="Require 'Authorization: Bearer KEY' on /v1/* and /metrics.",
            show_default=False,
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--cors-origin", help="Allow browser pages of this origin to call the API (repeat; default none)."
        ),
    ] = None,
    limits: Values = LIMITS(),
    similarity: Similarity = SimilarityName("cosine"),
    how: Values = ANN_SEARCH(),
    pooling: opt.Pooling = None,
) -> None:
    """Serve the model over HTTP: OpenAI's embeddings API, search, the reverse dictionary and its page.

    \b
    Examples:
      defsent serve -m ckpt/ --bank bank.h5
      defsent serve --index notes.h5 --port 8080 --api-key "$KEY"
      curl -s localhost:8000/v1/embeddings -H 'Content-Type: application/json' \\
          -d '{"input": ["a baby pig"], "model": "defsent"}'
      curl -s localhost:8000/v1/embeddings -H 'Content-Type: application/json' \\
          -d '{"input": ["a baby pig"], "dimensions": 128}'  # encode --dims 128

    Listens on 127.0.0.1 unless --host says otherwise; SIGTERM or Ctrl-C stops taking requests and finishes those
    in flight. docs/serve.md has the API, the limits and the metrics.
    """
    try:
        import fastapi  # noqa: F401
        import orjson  # noqa: F401
        import uvicorn
    except ImportError:
        raise DefsentError(
            "defsent serve needs FastAPI, uvicorn and orjson: pip install 'defsent-cli[serve]'"
        ) from None
    from ..encoder.onnx_runtime import describe
    from ..formats.bank import open_bank
    from ..formats.index import open_index
    from ..search.collections import bank_collection, index_collection
    from ..serve.app import Security, create_app
    from ..serve.engine import Engine
    from ..serve.server import DrainingServer

    if api_key is not None and not api_key.strip():
        raise DefsentError("--api-key (or DEFSENT_API_KEY) is empty: give a key, or leave it out to serve without one")
    if index is not None:
        index_file = open_index(index)
        index_file.verify()  # every block against its checksum now, not in a request (1.5-1.8 s per 1M rows)
    if bank is not None:
        bank_file = open_bank(bank)
    if dictionary is not None and bank is None:
        raise DefsentError("--dictionary gives the bank's definitions: pass --bank too")
    warn_given(
        [
            ("exact", index is None, "--exact has no effect: it tunes the search of --index, and no index is served"),
            ("ef_search", index is None, "--ef-search has no effect: it tunes --index's graph, and no index is served"),
            (
                "similarity",
                bank is None,
                "--similarity has no effect: it scores --bank's entries, and no bank is served",
            ),
        ]
    )
    sock = listen(host, port)
    try:
        loaded = load(model)
        encoder = encode_spec(pooling).resolve(loaded, batch_size=model.batch_size, show_progress=False)
        bank_search = index_search = None
        if bank is not None:
            bank_search = bank_collection(
                bank_file.load(), loaded, opt.value(similarity), model.batch_size, None, dictionary
            )
        if index is not None:
            index_search = index_collection(index_file, loaded, model.batch_size, None, how.exact, how.ef_search)
        engine = Engine(encoder, model_name(Path(model.model)), Limits(**dict(limits)), bank_search, index_search)
        app = create_app(engine, Security(api_key, list(cors_origin or [])))
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            server_header=False,
        )
        bound = sock.getsockname()
        served = (
            ", ".join(what for what, there in (("a bank", bank), ("an index", index)) if there is not None)
            or "embeddings only"
        )
        say(
            f"serving {loaded.path} ({describe(loaded)}, {loaded.dim} dims; {served}) on http://{host}:{bound[1]}/ "
            f"({'API key required' if api_key else 'no API key'}); Ctrl-C or SIGTERM stops it"
        )
        DrainingServer(config, engine).run(sockets=[sock])
    finally:
        sock.close()


HELP_ORDER = 210  # where `defsent --help` lists it (cli/app.py)


def register(app: typer.Typer) -> None:
    app.command("serve")(guard(takes_groups(serve_command)))
