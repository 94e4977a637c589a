"""``defsent serve`` under careless and hostile clients (issue 76, items 1, 2 and 5's names): one request's bad
text never fails another's, bodies are capped in bytes before they are read, texts longer than the model's window
are refused unless the client asks for truncation, a client that leaves and a drain that runs out are clean
outcomes, counted as what they were. The real server, started as a user starts it, on a free loopback port; every
wait bounded; all traffic to 127.0.0.1."""

from __future__ import annotations

import asyncio
import http.client as httpclient
import json
import os
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import run_bounded
from test_serve import DEFSENT, TORCH_FP32, defsent, http, serving, wait_for_depth, world  # noqa: F401

WORDS = " ".join(f"word{i}" for i in range(200))  # far over the tiny model's 64-token window


def raw_post(port: int, path: str, body: bytes, headers: dict | None = None, timeout: float = 60):
    """(status, lower-cased headers, parsed JSON) of a POST whose body is sent as given (invalid JSON escapes
    included), on a connection of its own."""
    connection = httpclient.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        raw = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(raw)
    finally:
        connection.close()


def metric(server, route: str, status: int) -> int:
    text = http("GET", server.url + "/metrics")[2]
    for line in text.splitlines():
        if line.startswith(f'defsent_requests_total{{route="{route}",status="{status}"}}'):
            return int(line.split()[-1])
    return 0


@pytest.fixture(scope="module")
def batching(world, tmp_path_factory):  # noqa: F811
    """A server that waits 1.5 s for requests to batch together, with a small byte cap."""
    folder = tmp_path_factory.mktemp("trust")
    args = ["-m", world["model"], "--bank", world["bank"], *TORCH_FP32]
    args += ["--max-wait-ms", "1500", "--max-batch", "1000", "--max-body-bytes", "4000"]
    with serving(folder, *args) as running:
        yield running


def test_a_bad_text_fails_its_own_request_only(batching):
    """A lone surrogate (valid JSON, not encodable text) beside an innocent request in the same batch window: the
    guilty request gets 400 on 'input', the innocent one its vectors."""
    bad = b'{"input": ["a baby pig", "half a pair \\ud800 here"]}'
    with ThreadPoolExecutor(2) as pool:
        guilty = pool.submit(raw_post, batching.port, "/v1/embeddings", bad)
        time.sleep(0.2)  # inside the 1.5 s window: they would share a batch
        innocent = pool.submit(raw_post, batching.port, "/v1/embeddings", b'{"input": "a baby pig"}')
        (code, _, answer), (ok, _, good) = guilty.result(60), innocent.result(60)
    assert code == 400 and answer["error"]["param"] == "input" and "surrogate" in answer["error"]["message"]
    assert answer["error"]["message"].startswith("'input'[1]")
    assert ok == 200 and len(good["data"]) == 1 and len(good["data"][0]["embedding"]) == 32
    assert "Traceback" not in batching.stderr()


def test_body_over_the_byte_cap_is_413_before_it_is_read(batching):
    big = json.dumps({"input": "x" * 5000}).encode()
    code, head, answer = raw_post(batching.port, "/v1/embeddings", big)
    assert code == 413 and answer["error"]["code"] == "request_too_large" and "--max-body-bytes" in str(answer)
    assert head.get("connection") == "close"  # the unread rest of the body ends the connection
    # no Content-Length (chunked): refused while it streams in
    connection = httpclient.HTTPConnection("127.0.0.1", batching.port, timeout=60)
    try:
        connection.putrequest("POST", "/v1/embeddings")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        for chunk in (b'{"input": "', b"y" * 3000, b"z" * 3000, b'"}'):
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        assert response.status == 413 and json.loads(response.read())["error"]["code"] == "request_too_large"
    finally:
        connection.close()
    small = json.dumps({"input": "x" * 3000}).encode()  # under the cap: answered
    assert raw_post(batching.port, "/v1/embeddings", small)[0] == 200


def test_a_text_over_the_window_is_refused_unless_truncation_is_asked(batching):
    code, _, answer = raw_post(batching.port, "/v1/embeddings", json.dumps({"input": ["short", WORDS]}).encode())
    assert code == 400 and answer["error"]["code"] == "context_length_exceeded"
    assert answer["error"]["param"] == "input" and answer["error"]["message"].startswith("'input'[1]")
    assert "64" in answer["error"]["message"] and "truncate" in answer["error"]["message"]
    body = json.dumps({"input": ["short", WORDS], "truncate": True}).encode()
    code, _, answer = raw_post(batching.port, "/v1/embeddings", body)
    assert code == 200 and len(answer["data"]) == 2
    short = raw_post(batching.port, "/v1/embeddings", b'{"input": "short"}')[2]["usage"]["prompt_tokens"]
    assert answer["usage"]["prompt_tokens"] == 64 + short  # the long text counts the window it was cut to
    code, _, answer = raw_post(batching.port, "/v1/embeddings", b'{"input": "short", "truncate": "yes"}')
    assert code == 400 and answer["error"]["param"] == "truncate"
    code, _, answer = raw_post(batching.port, "/v1/lookup", json.dumps({"query": WORDS}).encode())
    assert code == 400 and answer["error"]["param"] == "query" and answer["error"]["code"] == "context_length_exceeded"
    body = json.dumps({"query": WORDS, "truncate": True, "k": 1}).encode()
    assert raw_post(batching.port, "/v1/lookup", body)[0] == 200


def test_a_client_that_closes_mid_body_is_counted_499_and_logs_nothing(batching):
    before = metric(batching, "/v1/embeddings", 499)
    with socket.create_connection(("127.0.0.1", batching.port), timeout=10) as leaving:
        leaving.sendall(
            b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 500\r\n\r\n{"input": "a ba'
        )
        time.sleep(0.3)
    for _ in range(50):  # bounded: 5 s
        if metric(batching, "/v1/embeddings", 499) == before + 1:
            break
        time.sleep(0.1)
    assert metric(batching, "/v1/embeddings", 499) == before + 1
    assert metric(batching, "/v1/embeddings", 500) == 0
    assert "Traceback" not in batching.stderr() and "failed" not in batching.stderr()


def test_models_route_names_the_model_and_retrieves_it(world, batching):  # noqa: F811
    from openai import NotFoundError, OpenAI

    client = OpenAI(base_url=batching.url + "/v1", api_key="none", max_retries=0, timeout=30)
    listed = client.models.list().data
    assert [m.id for m in listed] == ["tiny-st"]  # the folder's name, as the user gave it
    assert client.models.retrieve("tiny-st").id == "tiny-st"
    with pytest.raises(NotFoundError):
        client.models.retrieve("gpt-4")


def test_hub_models_are_named_by_their_hub_id(tmp_path):
    from defsent_cli.cli.serve import model_name

    snapshot = tmp_path / "hub" / "models--acme--mini" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    assert model_name(snapshot) == "acme/mini"
    plain = tmp_path / "my-model"
    plain.mkdir()
    assert model_name(plain) == "my-model"
    assert model_name(tmp_path / "pkg" / "model") == "pkg"


def test_empty_api_key_is_refused(world):  # noqa: F811
    for args, env in ((["--api-key", ""], {}), ([], {"DEFSENT_API_KEY": "  "})):
        command = [*DEFSENT, "serve", "-m", str(world["model"]), *TORCH_FP32, *args, "--port", "0"]
        done = run_bounded(command, 120, capture_output=True, text=True, env={**os.environ, **env})
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines()[-1].startswith("error: --api-key") and "Traceback" not in done.stderr


def _request_in_thread(port: int, body: bytes, out: list) -> threading.Thread:
    def call():
        try:
            out.append(raw_post(port, "/v1/embeddings", body, timeout=60))
        except OSError as exc:  # a lost request: the connection closed under it
            out.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    return thread


def test_drain_closes_keep_alive_and_a_cut_request_gets_503(world, tmp_path):  # noqa: F811
    # the drain finishes the request in flight, answering it with Connection: close
    args = ["-m", world["model"], *TORCH_FP32, "--max-wait-ms", "1500", "--max-batch", "1000"]
    with serving(tmp_path, *args) as server:
        answers: list = []
        thread = _request_in_thread(server.port, b'{"input": "a baby pig"}', answers)
        wait_for_depth(server, 1, "the request never queued")
        server.process.send_signal(signal.SIGTERM)
        thread.join(60)
        code, head, answer = answers[0]
        assert code == 200 and head.get("connection") == "close" and len(answer["data"]) == 1
        assert server.process.wait(60) in (0, 130)
        assert "Traceback" not in server.stderr()
    # a drain shorter than the batch's wait: the waiting request is answered 503 shutting_down, not lost
    args = ["-m", world["model"], *TORCH_FP32, "--max-wait-ms", "20000", "--max-batch", "1000", "--drain-seconds", "1"]
    with serving(tmp_path, *args) as server:
        answers = []
        thread = _request_in_thread(server.port, b'{"input": "a baby pig"}', answers)
        wait_for_depth(server, 1, "the request never queued")
        server.process.send_signal(signal.SIGTERM)
        thread.join(60)
        code, head, answer = answers[0]
        assert code == 503 and answer["error"]["code"] == "shutting_down" and head.get("connection") == "close"
        assert server.process.wait(60) in (0, 130)
        assert "Traceback" not in server.stderr() and "answered 503" in server.stderr()


# ---------------------------------------------------------------- the batcher alone


def test_a_failed_batch_is_run_again_request_by_request():
    """Three requests in one batch, one of whose texts the function cannot take: the batch fails, each request is
    run alone, and only the guilty one gets the error."""
    from defsent_cli.serve.batcher import Batcher

    calls: list[list[str]] = []

    def fn(texts: list[str]) -> list[str]:
        calls.append(list(texts))
        if "boom" in texts:
            raise ValueError("cannot encode 'boom'")
        return [t.upper() for t in texts]

    async def main():
        with ThreadPoolExecutor(1) as pool:
            batcher = Batcher(fn, pool, max_batch=100, max_wait=0.2, max_queue=10)
            batcher.start()
            futures = [batcher.submit(t) for t in (["a", "b"], ["boom"], ["c"])]
            results = await asyncio.gather(*futures, return_exceptions=True)
            await batcher.stop()
            return results

    first, second, third = asyncio.run(main())
    assert first == ["A", "B"] and third == ["C"]
    assert isinstance(second, ValueError) and "boom" in str(second)
    assert calls == [["a", "b", "boom", "c"], ["a", "b"], ["boom"], ["c"]]


def test_a_lone_client_does_not_wait_for_company_and_clients_that_came_together_wait_for_each_other():
    """The window is a minute: a request whose last batch held one request runs at once (it would time out after
    10 s if it waited the window); after a batch of two requests, a lone one waits for a second to join it."""
    from defsent_cli.serve.batcher import Batcher

    calls: list[list[str]] = []

    def fn(texts: list[str]) -> list[str]:
        calls.append(list(texts))
        return [t.upper() for t in texts]

    async def main():
        with ThreadPoolExecutor(1) as pool:
            batcher = Batcher(fn, pool, max_batch=4, max_wait=60.0, max_queue=10)
            batcher.start()
            four = ["a", "b", "a2", "b2"]
            assert await asyncio.wait_for(batcher.submit(four), 10) == ["A", "B", "A2", "B2"]  # max_batch: at once
            assert await asyncio.wait_for(batcher.submit(["c"]), 10) == ["C"]  # the last batch held one request
            both = asyncio.gather(batcher.submit(["d"]), batcher.submit(["e"]))  # both waiting when it looks
            assert await asyncio.wait_for(both, 10) == [["D"], ["E"]]
            first = batcher.submit(["x"])  # the last batch held two requests: x waits for a second
            await asyncio.sleep(0.3)
            assert not first.done()
            second = batcher.submit(["y"])  # two requests, as the last batch held, under max_batch: x and y go
            assert await asyncio.wait_for(asyncio.gather(first, second), 10) == [["X"], ["Y"]]
            await batcher.stop()

    asyncio.run(main())
    assert calls == [["a", "b", "a2", "b2"], ["c"], ["d", "e"], ["x", "y"]]


def test_the_page_says_when_the_bank_has_no_definitions(world, tmp_path):  # noqa: F811
    """A bank whose dictionary is gone: the live page says that no definitions are shown, instead of promising
    them."""
    import shutil

    alone = tmp_path / "alone"
    alone.mkdir()
    bank = shutil.copy(world["bank"], alone / "bank.h5")  # its dictionary stays behind: the recorded path is gone
    with serving(tmp_path, "-m", world["model"], "--bank", bank, *TORCH_FP32) as server:
        code, _, page = http("GET", server.url + "/")
        assert code == 200 and "No definitions are shown" in page and "with their definitions" not in page
    with serving(tmp_path, "-m", world["model"], "--bank", world["bank"], *TORCH_FP32) as server:
        page = http("GET", server.url + "/")[2]
        assert "No definitions are shown" not in page and "with their definitions" in page


def test_serve_checks_its_index_before_it_listens_and_warns_of_options_without_effect(world, tmp_path):  # noqa: F811
    import shutil

    import h5py

    damaged = Path(shutil.copy(world["index"], tmp_path / "damaged.h5"))
    with h5py.File(damaged, "r") as h5:
        start = h5["vectors"].id.get_offset()
    with open(damaged, "r+b") as fh:
        fh.seek(start + 8)
        fh.write(b"\x7f\x7f\x7f\x7f" * 4)  # a few floats overwritten: huge values, still finite
    command = [*DEFSENT, "serve", "-m", str(world["model"]), "--index", str(damaged), *TORCH_FP32, "--port", "0"]
    done = run_bounded(command, 120, capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and str(damaged) in last
    args = ["-m", world["model"], "--index", world["index"], *TORCH_FP32, "--similarity", "dot", "--exact"]
    with serving(tmp_path, *args) as server:
        assert http("GET", server.url + "/health")[0] == 200
    said = server.stderr()
    assert "--similarity has no effect: it scores --bank's entries, and no bank is served" in said
    assert "no index is served" not in said  # --exact: an index is served (it has no graph: warned as such)


class CountingTokenizer:
    """A tokenizer that counts the texts it is asked to tokenise, and is otherwise the one it wraps."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.inner(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_each_request_is_tokenised_once_and_its_ids_give_encode_vectors(world):  # noqa: F811
    """Issue 81: the measuring thread tokenises a request (its usage, its check against the window) and the ids go on
    to the model: the encoding thread tokenises nothing, and the vectors are encode's, a text over the window cut as
    encode cuts it."""
    import numpy as np

    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.spec import Encoder
    from defsent_cli.serve.engine import Engine, TooLong
    from defsent_cli.serve.limits import Limits

    loaded = load_model(world["model"], "cpu")
    encoder = Encoder.of(loaded, "mean")
    engine = Engine(encoder, "tiny", Limits())
    texts = ["a baby pig", "A man is playing a guitar.", WORDS]
    expected = encoder(texts)  # encode truncates to the window as it tokenises
    with pytest.raises(TooLong):
        engine.measure(texts)
    ids = engine.measure(texts, truncate=True)
    assert [len(one) for one in ids][2] == engine.token_limit == 64
    counting = loaded.tokenizer = CountingTokenizer(loaded.tokenizer)
    vectors = engine._embed(ids)
    assert counting.calls == 0
    np.testing.assert_allclose(vectors, expected, atol=1e-6, rtol=0)
    engine.executor.shutdown()
    engine.measuring.shutdown()


def test_a_search_runs_beside_the_encoding_of_the_next_batch(world):  # noqa: F811
    """The encoded queries are searched on a thread of their own: while the first request's search waits (here, for
    the second request's encoding to happen), the encoding thread encodes the second request. Were both on one
    thread, the first search would wait in vain (10 s) and fail."""
    import threading

    import numpy as np

    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.spec import Encoder
    from defsent_cli.serve.engine import Engine
    from defsent_cli.serve.limits import Limits

    second_encoded = threading.Event()
    threads: dict[str, set] = {"vectors": set(), "search": set()}

    class Collection:
        def vectors(self, texts):
            threads["vectors"].add(threading.current_thread().name)
            if "second" in texts:
                second_encoded.set()
            return np.ones((len(texts), 4), dtype=np.float32)

        def search_vectors(self, vectors, k):
            threads["search"].add(threading.current_thread().name)
            if not second_encoded.is_set() and not second_encoded.wait(10):
                raise AssertionError("the second request was not encoded while the first was searched")
            return [[{"id": 1, "text": "x", "score": 1.0}] for _ in vectors]

    encoder = Encoder.of(load_model(world["model"], "cpu"), "mean")
    engine = Engine(encoder, "tiny", Limits(max_wait_ms=0), index=Collection())

    async def main():
        engine.start()
        first = asyncio.ensure_future(engine.search("search", ["first"], 1, lambda future: future))
        while not threads["search"]:  # the first request is being searched
            await asyncio.sleep(0.01)
        second = await engine.search("search", ["second"], 1, lambda future: future)
        results = [await first, second]
        await engine.stop()
        return results

    first, second = asyncio.run(asyncio.wait_for(main(), 60))
    assert first == second == [[{"id": 1, "text": "x", "score": 1.0}]]
    assert all(name.startswith("defsent-serve") for name in threads["vectors"])
    assert all(name.startswith("defsent-search") for name in threads["search"])


def test_a_small_server_batch_is_split_across_the_workers_but_not_in_bf16(world, monkeypatch):  # noqa: F811
    """Eight texts, two workers: the server's batch (``spread``) runs as two batches of four in fp32 and as one of
    eight in bf16 (its matrix units want the whole batch), with the vectors of the unsplit batch either way."""
    import numpy as np

    from defsent_cli.encoder import encode as encode_module
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.onnx_runtime import use_runtime
    from defsent_cli.encoder.pooling import get_pooling
    from defsent_cli.encoder.tokenize import tokenize

    sizes: list[list[int]] = []
    original = encode_module.length_batches

    def recording(lengths, batch_size, budget):
        batches = original(lengths, batch_size, budget)
        sizes.append([len(batch) for batch in batches])
        return batches

    monkeypatch.setattr(encode_module, "length_batches", recording)
    monkeypatch.setenv("DEFSENT_ENCODE_WORKERS", "2")
    pool = get_pooling("mean")
    for precision, expected in (("fp32", [4, 4]), ("bf16", [8])):
        loaded = use_runtime(load_model(world["model"], "cpu"), "torch", precision)
        ids = tokenize([f"text number {i} of eight" for i in range(8)], loaded.tokenizer, pool, 64)
        split = encode_module.encode_ids(loaded, ids, pool, 32, spread=True)
        assert sizes[-1] == expected, (precision, sizes)
        whole = encode_module.encode_ids(loaded, ids, pool, 32)
        np.testing.assert_allclose(split, whole, atol=1e-5)


def test_searches_waiting_for_the_search_thread_are_bounded_and_cut_by_the_drain(world):  # noqa: F811
    """--max-queue 2: one search running (held), one waiting for the search thread, a third refused at once
    (QueueFull: 503). The drain's cut counts both; the running one finishes, the waiting one is answered Stopping."""
    import threading

    import numpy as np

    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.spec import Encoder
    from defsent_cli.serve.batcher import QueueFull, Stopping
    from defsent_cli.serve.engine import Engine
    from defsent_cli.serve.limits import Limits

    release, running = threading.Event(), threading.Event()

    class Collection:
        def vectors(self, texts):
            return np.ones((len(texts), 4), dtype=np.float32)

        def search_vectors(self, vectors, k):
            running.set()
            assert release.wait(30), "never released"
            return [[{"id": 1, "text": "x", "score": 1.0}] for _ in vectors]

    encoder = Encoder.of(load_model(world["model"], "cpu"), "mean")
    engine = Engine(encoder, "tiny", Limits(max_wait_ms=0, max_queue=2), index=Collection())

    async def main():
        engine.start()
        search = lambda text: asyncio.ensure_future(engine.search("search", [text], 1, lambda future: future))  # noqa: E731
        first = search("first")
        while not running.is_set():
            await asyncio.sleep(0.01)
        second = search("second")
        while engine.searches < 2:
            await asyncio.sleep(0.01)
        with pytest.raises(QueueFull):
            await engine.search("search", ["third"], 1, lambda future: future)
        cut = engine.cut()
        release.set()
        results = await asyncio.gather(first, second, return_exceptions=True)
        await engine.stop()
        return cut, results

    cut, (first, second) = asyncio.run(asyncio.wait_for(main(), 60))
    assert cut == 2
    assert first == [[{"id": 1, "text": "x", "score": 1.0}]]
    assert isinstance(second, Stopping)
