"""``defsent index``, ``defsent search`` and ``defsent serve``, driven as a user drives them: the commands in
subprocesses, the server started on a free loopback port and called by clients nobody here wrote (the official
``openai`` package, a real Chromium through selenium). Every wait is bounded in count and seconds; all traffic
goes to 127.0.0.1."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from conftest import run_bounded, run_warm

DEFSENT = [sys.executable, "-m", "defsent_cli"]
TORCH_FP32 = ["--runtime", "torch", "--precision", "fp32", "--device", "cpu"]
ENTRIES = {
    "piglet": "a baby pig",
    "giraffe": "a long-necked african animal",
    "joy": "a feeling of great happiness",
    "teakettle": "a pot for boiling water to make tea",
    "dog": "a domesticated carnivorous mammal kept as a pet",
    "fish": "an animal that lives in water and swims with fins",
    "sprint": "the act of running quickly",
}
TEXTS = [
    "two men are playing guitar on the street",
    "a woman is slicing an onion in the kitchen",
    "a feeling of great happiness",
    "the act of running quickly",
]


def defsent(*args, input: str | None = None, timeout: float = 180):
    return run_warm([*DEFSENT, *map(str, args)], timeout, input=input, capture_output=True, text=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_st) -> dict:
    """A tiny sentence-transformers model, a dictionary where piglet is "a baby pig", its bank, a text index."""
    folder = tmp_path_factory.mktemp("serve")
    dictionary = folder / "dict.jsonl"
    rows = [{"entry": e, "definitions": [d], "sources": ["test"], "split": "train"} for e, d in ENTRIES.items()]
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = folder / "bank.h5"
    done = defsent("embed-entries", dictionary, "-m", tiny_st, "--pool", "mean", "-o", bank, *TORCH_FP32, "-q")
    assert done.returncode == 0, done.stderr
    texts = folder / "texts.txt"
    texts.write_text("".join(t + "\n" for t in TEXTS))
    index = folder / "index.h5"
    done = defsent("index", texts, "-m", tiny_st, "-o", index, *TORCH_FP32)
    assert done.returncode == 0, done.stderr
    return {"model": tiny_st, "dict": dictionary, "bank": bank, "index": index, "folder": folder}


#: entry -> [(definition, part of speech)]: the reverse dictionary's filters, synonyms and senses (issue 78)
SENSES = {
    **{entry: [(definition, "n")] for entry, definition in ENTRIES.items()},
    "shote": [("a baby pig", "n")],
    "piggy": [("a young pig", "n"), ("like a pig; greedy", "s")],
    "swim": [("move through water using arms and legs", "v")],
    "booklet": [("a small book with a paper cover", "n")],
}


@pytest.fixture(scope="module")
def pos_world(world) -> dict:
    """A dictionary whose senses carry WordNet's part-of-speech letters (shote and piglet: one synset), its bank."""
    dictionary = world["folder"] / "pos-dict.jsonl"
    rows = [
        {"entry": e, "definitions": [d for d, _ in s], "sources": ["test"], "meta": [{"pos": p} for _, p in s]}
        for e, s in SENSES.items()
    ]
    dictionary.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bank = world["folder"] / "pos-bank.h5"
    done = defsent("embed-entries", dictionary, "-m", world["model"], "--pool", "mean", "-o", bank, *TORCH_FP32, "-q")
    assert done.returncode == 0, done.stderr
    return {**world, "dict": dictionary, "bank": bank}


# ---------------------------------------------------------------- index and search on the command line


def test_index_rows_are_encode_vectors_and_search_finds_them(world, tmp_path):
    import h5py

    done = defsent("encode", *TEXTS, "-m", world["model"], "-f", "jsonl", *TORCH_FP32)
    assert done.returncode == 0, done.stderr
    expected = np.array([json.loads(line)["embedding"] for line in done.stdout.splitlines()], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    with h5py.File(world["index"], "r") as h5:
        assert h5.attrs["format"] == "defsent-index/1" and h5.attrs["similarity"] == "cosine"
        np.testing.assert_allclose(h5["vectors"][:], expected, atol=1e-6)
        assert [t.decode() for t in h5["texts"][:]] == TEXTS
    done = defsent(
        "search", "--index", world["index"], "-k", "2", "--json", "a woman is slicing an onion in the kitchen"
    )
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["similarity"] == "cosine" and row["kind"] == "index"
    assert row["results"][0] == {"id": 2, "text": TEXTS[1], "score": pytest.approx(1.0, abs=1e-5)}
    assert len(row["results"]) == 2 and row["results"][1]["score"] <= row["results"][0]["score"]
    assert "cosine" in done.stderr and "scores are" in done.stderr  # the score's kind is stated
    # plain text: queries from stdin, one block each
    done = defsent("search", "--index", world["index"], "-k", "1", input="the act of running quickly\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["the act of running quickly", "   1. [4] the act of running quickly\t1.0000"]


def test_index_jsonl_from_stdin_keeps_ids_and_refuses_overwrite(world, tmp_path):
    lines = [json.dumps({"doc": f"d-{i}", "body": t}) for i, t in enumerate(TEXTS)]
    out = tmp_path / "docs.h5"
    args = ["index", "-m", world["model"], "--field", "body", "--id-field", "doc", "-o", out, *TORCH_FP32]
    done = defsent(*args, input="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stderr and done.stdout == ""  # notes on stderr, nothing on stdout
    found = json.loads(defsent("search", "--index", out, "--json", "-k", "1", TEXTS[2]).stdout)
    assert found["results"][0]["id"] == "d-2" and found["results"][0]["text"] == TEXTS[2]
    again = defsent(*args, input="\n".join(lines) + "\n")
    assert again.returncode == 2 and again.stderr.startswith("error: ") and str(out) in again.stderr
    assert "--force" in again.stderr and "Traceback" not in again.stderr
    plain = defsent("index", "-m", world["model"], "-o", tmp_path / "x.h5", input=lines[0] + "\n")
    assert plain.returncode == 2 and "--field" in plain.stderr and not (tmp_path / "x.h5").exists()
    wrong = defsent("search", "--index", world["dict"], "a baby pig")
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: ") and str(world["dict"]) in wrong.stderr


def test_search_over_a_bank_is_the_reverse_dictionary(world):
    done = defsent("search", "--index", world["bank"], "-k", "3", "--json", "a baby pig")
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert row["kind"] == "bank" and row["similarity"] == "cosine"
    assert row["results"][0]["entry"] == "piglet" and row["results"][0]["definitions"] == ["a baby pig"]
    assert row["results"][0]["score"] == pytest.approx(1.0, abs=1e-5)
    dot = json.loads(defsent("search", "--index", world["bank"], "--similarity", "dot", "--json", "a baby pig").stdout)
    assert dot["similarity"] == "dot"
    assert dot["results"][0]["entry"] == "piglet" and dot["results"][0]["score"] > 1.5  # unnormalised mean rows


# ---------------------------------------------------------------- the server, as a user starts it


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http(method: str, url: str, body=None, headers=None, timeout: float = 30):
    """(status, headers, parsed JSON or text) of one request; errors are answers too."""
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, head, raw = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        status, head, raw = exc.code, dict(exc.headers), exc.read()
    text = raw.decode()
    try:
        return status, head, json.loads(text)
    except json.JSONDecodeError:
        return status, head, text


class Server:
    def __init__(self, process: subprocess.Popen, port: int, log: Path):
        self.process, self.port, self.log = process, port, log
        self.url = f"http://127.0.0.1:{port}"

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def serving(tmp_path: Path, *args, startup: float = 120):
    """``defsent serve ARGS`` on a free loopback port, waited for on /health (bounded), stopped at the end."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [*DEFSENT, "serve", *map(str, args), "--port", str(port)], stdout=subprocess.DEVNULL, stderr=err
        )
    server = Server(process, port, log)
    try:
        deadline = time.monotonic() + startup
        for _ in range(int(startup * 10)):
            if process.poll() is not None:
                pytest.fail(f"defsent serve exited with {process.returncode}:\n{server.stderr()[-3000:]}")
            with contextlib.suppress(OSError):
                if http("GET", server.url + "/health", timeout=2)[0] == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"defsent serve did not answer /health in {startup:g} s:\n{server.stderr()[-3000:]}")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


KEY = "test-key-123"


@pytest.fixture(scope="module")
def server(world, tmp_path_factory):
    folder = tmp_path_factory.mktemp("server")
    args = ["-m", world["model"], "--bank", world["bank"], "--index", world["index"], *TORCH_FP32]
    args += ["--api-key", KEY, "--max-inputs", "8", "--max-chars", "200"]
    with serving(folder, *args) as running:
        yield running


def test_openai_client_gets_encode_vectors_and_usage(world, server):
    from openai import OpenAI
    from transformers import AutoTokenizer

    inputs = ["A man is playing a guitar.", "a baby pig", "Someone plays the guitar on the street."]
    done = defsent("encode", *inputs, "-m", world["model"], "-f", "jsonl", *TORCH_FP32)
    assert done.returncode == 0, done.stderr
    expected = np.array([json.loads(line)["embedding"] for line in done.stdout.splitlines()], dtype=np.float32)
    tokens = sum(len(ids) for ids in AutoTokenizer.from_pretrained(world["model"])(inputs)["input_ids"])

    client = OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
    for fmt in ("float", "base64", None):  # the client asks for base64 and decodes it when not told
        extra = {} if fmt is None else {"encoding_format": fmt}
        response = client.embeddings.create(model="tiny", input=inputs, **extra)
        rows = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        if fmt == "base64":  # asked for explicitly, the client hands the base64 over as it came: little-endian float32
            rows = [np.frombuffer(base64.b64decode(row), dtype="<f4") for row in rows]
        got = np.array(rows, dtype=np.float32)
        np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)
        assert response.usage.prompt_tokens == tokens and response.usage.total_tokens == tokens
        assert response.object == "list" and response.model == Path(world["model"]).name
    one = client.embeddings.create(model="tiny", input=inputs[1])
    assert len(one.data) == 1
    np.testing.assert_allclose(one.data[0].embedding, expected[1], atol=1e-6, rtol=0)


def test_errors_are_openai_error_objects(server):
    import openai
    from openai import OpenAI

    client = OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
    with pytest.raises(openai.APIStatusError) as too_many:
        client.embeddings.create(model="tiny", input=["a"] * 9)
    assert too_many.value.status_code == 413 and "--max-inputs" in too_many.value.message
    with pytest.raises(openai.BadRequestError) as too_long:
        client.embeddings.create(model="tiny", input="x" * 201)
    assert too_long.value.status_code == 400 and "200" in too_long.value.message
    with pytest.raises(openai.AuthenticationError) as bad_key:
        OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0).embeddings.create(model="t", input="a")
    assert bad_key.value.status_code == 401
    auth = {"Authorization": f"Bearer {KEY}"}
    cases = [
        ({"input": "a baby pig", "encoding_format": "int8"}, 400, "encoding_format"),
        ({"input": [1, 2, 3]}, 400, "input"),
        ({"input": "a", "dimensions": 33}, 400, "dimensions"),  # over the tiny model's 32 (tests/test_dims.py)
        ({"model": "tiny"}, 400, "input"),
        ({"input": ["a"] * 9}, 413, "input"),
    ]
    for body, status, param in cases:
        code, _, answer = http("POST", server.url + "/v1/embeddings", body, auth)
        assert code == status, (body, answer)
        assert set(answer["error"]) == {"message", "type", "param", "code"} and answer["error"]["param"] == param
    code, _, answer = http("POST", server.url + "/v1/embeddings", b"{not json", auth)
    assert code == 400 and "JSON" in answer["error"]["message"]
    code, head, answer = http("POST", server.url + "/v1/embeddings", {"input": "a"})  # no key at all
    assert code == 401 and answer["error"]["code"] == "invalid_api_key" and head.get("www-authenticate") == "Bearer"
    code, _, answer = http("GET", server.url + "/no/such/path")
    assert code == 404 and "error" in answer
    assert "Traceback" not in server.stderr()


def test_search_lookup_health_metrics(server):
    auth = {"Authorization": f"Bearer {KEY}"}
    code, _, answer = http("POST", server.url + "/v1/lookup", {"query": "a baby pig", "k": 3}, auth)
    assert code == 200 and answer["similarity"] == "cosine" and answer["kind"] == "bank"
    hit = answer["data"][0]["results"][0]
    assert hit["entry"] == "piglet" and hit["definitions"] == ["a baby pig"]
    code, _, answer = http("POST", server.url + "/v1/search", {"query": [TEXTS[1], TEXTS[3]], "k": 1}, auth)
    assert code == 200 and [row["results"][0]["id"] for row in answer["data"]] == [2, 4]
    code, _, answer = http("POST", server.url + "/v1/search", {"query": "x", "k": 0}, auth)
    assert code == 400 and answer["error"]["param"] == "k"
    code, _, health = http("GET", server.url + "/health")
    assert code == 200 and health["status"] == "ok" and health["bank"] and health["index"] and health["auth"]
    assert http("GET", server.url + "/metrics")[0] == 401  # behind the key too
    code, head, text = http("GET", server.url + "/metrics", headers=auth)
    assert code == 200 and head["content-type"].startswith("text/plain; version=0.0.4")
    for name in ("defsent_requests_total{", "defsent_request_duration_seconds_bucket{", "defsent_batch_size_texts_bucket{",
                 "defsent_queue_depth ", "# TYPE defsent_request_duration_seconds histogram"):  # fmt: skip
        assert name in text, name
    served = [
        line for line in text.splitlines() if line.startswith('defsent_requests_total{route="/v1/lookup",status="200"}')
    ]
    assert served and int(served[0].split()[-1]) >= 1
    code, head, page = http("GET", server.url + "/")
    assert (
        code == 200 and "<form" in page and "http://" not in page and "https://" not in page
    )  # nothing from the network
    assert "access-control-allow-origin" not in {k.lower() for k in head}  # no CORS unless asked


def test_lookup_filters_patterns_synonyms_and_define_over_http(pos_world, server, tmp_path):
    auth = {"Authorization": f"Bearer {KEY}"}
    code, _, answer = http("POST", server.url + "/v1/lookup", {"query": "a baby pig", "pos": "noun"}, auth)
    assert (
        code == 400 and answer["error"]["param"] == "pos" and "keeps no parts of speech" in answer["error"]["message"]
    )
    with serving(tmp_path, "-m", pos_world["model"], "--bank", pos_world["bank"], *TORCH_FP32) as running:

        def lookup(body: dict) -> list[dict]:
            code, _, answer = http("POST", running.url + "/v1/lookup", body)
            assert code == 200, answer
            return answer["data"][0]["results"]

        found = lookup({"query": "a baby pig", "k": 3})
        assert len(found) == 3 and found[0]["words"] == ["piglet", "shote"] and found[0]["pos"] == ["noun"]
        assert found[0]["definitions"] == ["a baby pig"] and found[0]["score"] == pytest.approx(1.0, abs=1e-5)
        adjectives = lookup({"query": "greedy", "pos": "adj", "k": 5})  # filtered before the top k: the only one
        assert [hit["entry"] for hit in adjectives] == ["piggy"] and adjectives[0]["definitions"] == [
            "like a pig; greedy"
        ]
        assert [hit["entry"] for hit in lookup({"query": "pos:verb a baby pig"})] == ["swim"]
        alone = lookup({"query": "pig*"})
        assert [(hit["entry"], hit["score"], hit["senses"]) for hit in alone] == [
            ("piggy", None, 2),
            ("piglet", None, 1),
        ]
        assert [hit["entry"] for hit in lookup({"query": "????let"})] == ["booklet"]
        assert lookup({"query": "a baby pig", "pattern": "s*"})[0]["words"] == ["shote"]
        assert lookup({"query": "a baby pig:p*"})[0]["words"] == ["piglet"]
        for body, param in (({"query": "x", "pos": "fruit"}, "pos"), ({"query": "x", "pattern": "a b*"}, "pattern"),
                            ({"query": "x", "pos": 3}, "pos")):  # fmt: skip
            code, _, answer = http("POST", running.url + "/v1/lookup", body)
            assert code == 400 and answer["error"]["param"] == param, answer
        code, _, answer = http("GET", running.url + "/v1/define?word=Piggy")
        assert code == 200 and answer["entry"] == "piggy"
        assert answer["senses"] == [
            {"definition": "a young pig", "pos": "noun"},
            {"definition": "like a pig; greedy", "pos": "adj"},
        ]
        code, _, answer = http("GET", running.url + "/v1/define?word=hog")
        assert code == 404 and "'hog' is not an entry" in answer["error"]["message"]
        assert http("GET", running.url + "/v1/define")[0] == 400


def wait_for_depth(server, depth: int, failure: str) -> None:
    """Poll /health until the queue holds ``depth`` requests: 50 tries, 2.5 s at most."""
    for _ in range(50):
        if http("GET", server.url + "/health")[2]["queue_depth"] == depth:
            return
        time.sleep(0.05)
    pytest.fail(failure)


def test_full_queue_is_503_and_sigterm_finishes_requests_in_flight(world, tmp_path):
    args = ["-m", world["model"], *TORCH_FP32, "--max-wait-ms", "2500", "--max-batch", "1000", "--max-queue", "2"]
    with serving(tmp_path, *args) as server:
        answers: list = [None, None]

        def call(slot: int) -> None:
            answers[slot] = http(
                "POST", server.url + "/v1/embeddings", {"input": [f"text {slot}", "a baby pig"]}, timeout=60
            )

        threads = [threading.Thread(target=call, args=(slot,)) for slot in range(2)]
        for thread in threads:
            thread.start()
        wait_for_depth(server, 2, "the two requests never queued")  # both in the batcher (it waits 2.5 s for more)
        code, head, answer = http("POST", server.url + "/v1/embeddings", {"input": "one more"})
        assert code == 503 and head.get("retry-after") == "1" and answer["error"]["code"] == "overloaded"
        server.process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(60)
        assert all(a is not None and a[0] == 200 for a in answers), answers
        assert all(len(a[2]["data"]) == 2 and a[2]["usage"]["prompt_tokens"] > 0 for a in answers)
        server.process.wait(60)
        assert server.process.returncode in (0, 130), server.stderr()
        with pytest.raises(OSError):
            http("GET", server.url + "/health", timeout=2)
        assert "Traceback" not in server.stderr()


def test_a_client_that_leaves_frees_its_place(world, tmp_path):
    args = ["-m", world["model"], *TORCH_FP32, "--max-wait-ms", "4000", "--max-batch", "1000", "--max-queue", "1"]
    with serving(tmp_path, *args) as server:
        body = json.dumps({"input": "a baby pig"}).encode()
        head = f"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        leaving = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        leaving.sendall(head.encode() + body)
        wait_for_depth(server, 1, "the request never queued")
        leaving.close()
        wait_for_depth(server, 0, "the place of a client that left was not freed")
        code, _, answer = http("POST", server.url + "/v1/embeddings", {"input": "a baby pig"}, timeout=60)
        assert code == 200 and len(answer["data"]) == 1  # the queue of one took it: the slot was free


def test_port_in_use_is_one_line_error(world, tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        done = defsent("serve", "-m", world["model"], "--port", port, *TORCH_FP32, timeout=60)
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1].startswith("error: cannot listen")


# ---------------------------------------------------------------- a real browser


def browser_paths() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.skip(
            "no browser: this test drives Debian's chromium with chromium-driver (apt-get install -y chromium "
            "chromium-driver, or make browser)"
        )
    pytest.importorskip("selenium", reason="selenium is in the dev extra: pip install -e '.[dev]'")
    return chromium, driver


def test_reverse_dictionary_page_in_a_real_browser(pos_world, tmp_path):
    """Typing, the key's error for a person, synonyms, the part-of-speech selector, a pattern, a word's senses,
    the back button and a deep link, in headless Chromium; screenshots to $DEFSENT_SCREENSHOTS when set."""
    chromium, driver_path = browser_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait

    shots = Path(os.environ.get("DEFSENT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    args = ["-m", pos_world["model"], "--bank", pos_world["bank"], "--index", pos_world["index"], *TORCH_FP32]
    with serving(tmp_path, *args, "--api-key", KEY) as server:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,760",
                     "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}"):  # fmt: skip
            options.add_argument(flag)
        browser = webdriver.Chrome(service=Service(driver_path), options=options)
        wait = WebDriverWait(browser, 30, 0.1)

        def status() -> str:
            return browser.find_element(By.ID, "status").text

        def hits() -> list[str]:
            return [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#results > li")]

        def search(text: str, after: str) -> list[str]:
            box = browser.find_element(By.ID, "q")
            box.clear()
            box.send_keys(text, Keys.ENTER)  # the keyboard alone
            wait.until(lambda b: after in status() and "Searching" not in status())
            return hits()

        try:
            browser.set_page_load_timeout(30)
            browser.get(server.url + "/")
            box = browser.find_element(By.ID, "q")
            assert browser.switch_to.active_element == box  # the box has the focus: type at once
            box.send_keys("a baby pig", Keys.ENTER)
            wait.until(lambda b: "API key" in status())
            assert status() == "This server needs an API key: enter it in the Key box."
            assert browser.find_element(By.ID, "status").value_of_css_property("color") == "rgba(176, 0, 32, 1)"  # red
            assert browser.save_screenshot(str(shots / "1-key-error.png"))
            browser.find_element(By.ID, "key").send_keys(KEY)
            found = search("a baby pig", "results for")
            assert found[0].startswith("piglet, shote") and "a baby pig" in found[0], found  # one synset, one result
            assert "cosine" in status() and browser.current_url.endswith("/?q=a+baby+pig")
            Select(browser.find_element(By.ID, "pos")).select_by_value("adj")
            found = search("greedy", "for \u201cgreedy\u201d")
            assert len(found) == 1 and found[0].startswith("piggy") and "adj" in found[0], found
            assert browser.current_url.endswith("/?q=greedy&pos=adj")
            Select(browser.find_element(By.ID, "pos")).select_by_value("")
            found = search("pig*", "spelling pattern")
            assert found[0].startswith("piggy") and "2 senses" in found[0] and found[1].startswith("piglet"), found
            assert "\n1. a young pig\n2. like a pig; greedy" in found[0], found  # each sense its own line
            browser.find_element(By.LINK_TEXT, "piggy").click()  # a word shows its senses
            wait.until(lambda b: "like a pig; greedy" in b.find_element(By.ID, "senses").text)
            senses = browser.find_element(By.ID, "senses").text
            assert "a young pig" in senses and "noun" in senses and "adj" in senses
            assert browser.save_screenshot(str(shots / "2-pattern-and-senses.png"))
            browser.back()  # the back button walks the queries: greedy as an adjective again
            wait.until(lambda b: "for \u201cgreedy\u201d" in status())
            assert Select(browser.find_element(By.ID, "pos")).first_selected_option.get_attribute("value") == "adj"
            assert browser.find_element(By.ID, "q").get_attribute("value") == "greedy" and len(hits()) == 1
            browser.back()
            wait.until(lambda b: "for \u201ca baby pig\u201d" in status())
            assert hits()[0].startswith("piglet, shote")
            browser.get(server.url + "/?q=a+baby+pig&pos=noun")  # a deep link opens with its results
            wait.until(lambda b: "results for" in status())
            assert Select(browser.find_element(By.ID, "pos")).first_selected_option.get_attribute("value") == "noun"
            found = hits()
            assert found[0].startswith("piglet, shote") and all("noun" in hit for hit in found), found
            assert browser.save_screenshot(str(shots / "3-deep-link.png"))
        finally:
            browser.quit()


def test_help_names_no_heavy_import():
    code = "import sys; from defsent_cli.cli.app import app; import defsent_cli.cli.serve, defsent_cli.cli.search, defsent_cli.cli.index; print(sorted(m for m in ('fastapi','uvicorn','torch','numpy','h5py') if m in sys.modules))"
    done = run_bounded([sys.executable, "-c", code], 60, capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
