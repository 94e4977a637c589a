"""The encode loop and ``defsent encode`` on tiny models."""

import io
import json

import h5py
import numpy as np
import pytest

from defsent_cli.encoder.encode import encode
from defsent_cli.encoder.models import load_model
from defsent_cli.encoder.pooling import PROMPT_TEMPLATE, get_pooling
from defsent_cli.encoder.tokenize import apply_template, tokenize
from defsent_cli.errors import DefsentError

SENTS = [
    "a long-necked african animal",
    "dog",
    "give new life or vigor to something that was tired and old and slow",
    "a feeling of great happiness",
    "two men are playing guitar",
]


@pytest.fixture(scope="module")
def bert(tiny_bert):
    return load_model(tiny_bert, "cpu")


@pytest.mark.parametrize("pooling", ["cls", "mean", "max", "prompt"])
def test_output_independent_of_batch_size_and_order(bert, pooling):
    one = encode(SENTS, bert, pooling=pooling, batch_size=1)
    many = encode(SENTS, bert, pooling=pooling, batch_size=3)
    assert one.shape == (len(SENTS), 32) and one.dtype == np.float32
    np.testing.assert_allclose(one, many, atol=1e-5)
    # row i is sentence i: encoding a sentence alone gives its row
    alone = encode([SENTS[2]], bert, pooling=pooling)
    np.testing.assert_allclose(alone[0], many[2], atol=1e-5)


def test_mean_pooling_matches_hand_computation(bert):
    import torch

    ids = bert.tokenizer(SENTS[0], return_tensors="pt")
    with torch.no_grad():
        states = bert.model(**ids).last_hidden_state[0]
    np.testing.assert_allclose(encode([SENTS[0]], bert, "mean")[0], states.mean(0).numpy(), atol=1e-6)
    np.testing.assert_allclose(encode([SENTS[0]], bert, "cls")[0], states[0].numpy(), atol=1e-6)


def test_normalize_gives_unit_rows(bert):
    vecs = encode(SENTS, bert, "mean", normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_prompt_template_filled_with_model_mask_token(tiny_roberta):
    roberta = load_model(tiny_roberta, "cpu")
    text, start, end = apply_template(PROMPT_TEMPLATE, "a dog", roberta.tokenizer.mask_token)
    assert text == 'This sentence : "a dog" means <mask> .'
    assert text[start:end] == "a dog"
    assert encode(["a dog"], roberta, "prompt").shape == (1, 32)


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_roberta"])
def test_prompt_truncation_never_cuts_the_mask(request, fixture):
    loaded = load_model(request.getfixturevalue(fixture), "cpu")
    long = " ".join(["animal"] * 200)
    ids = tokenize([long], loaded.tokenizer, get_pooling("prompt"), 20)[0]
    assert len(ids) == 20
    assert loaded.tokenizer.mask_token_id in ids
    # the template's tail ('means [MASK] .' + end token) survives intact
    tail = loaded.tokenizer.convert_ids_to_tokens(ids[-4:])
    assert loaded.tokenizer.mask_token in tail
    assert encode([long], loaded, "prompt", max_length=20).shape == (1, 32)


def test_prompt_max_length_too_short_is_an_error(bert):
    with pytest.raises(DefsentError, match="too short for the prompt template"):
        tokenize(["a dog"], bert.tokenizer, get_pooling("prompt"), 5)


def test_sentence_transformers_folder_loads_with_its_defaults(tiny_st):
    loaded = load_model(tiny_st, "cpu")
    assert loaded.source == "sentence-transformers"
    assert loaded.default_pooling == "mean" and loaded.normalize and loaded.max_length == 64


def test_matches_sentence_transformers(tiny_st):
    st = pytest.importorskip("sentence_transformers")
    theirs = st.SentenceTransformer(str(tiny_st), device="cpu").encode(SENTS, convert_to_numpy=True)
    ours = encode(SENTS, load_model(tiny_st, "cpu"), normalize_embeddings=True)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_not_a_model_folder_is_a_clear_error(tmp_path):
    with pytest.raises(DefsentError, match="not a transformers model folder"):
        load_model(tmp_path, "cpu")
    with pytest.raises(DefsentError, match="no such folder"):  # a path, not a Hub name
        load_model(tmp_path / "bert-base-uncased", "cpu")


# ---- the CLI, as a user runs it ----


def npy(result) -> np.ndarray:
    return np.load(io.BytesIO(result.stdout_bytes))


def test_cli_pipe_stdin_to_npy_stdout(cli, tiny_bert, bert):
    result = cli("encode", "--model", tiny_bert, "--pooling", "mean", input="\n".join(SENTS) + "\n")
    assert result.exit_code == 0, result.stderr
    vecs = npy(result)
    np.testing.assert_allclose(vecs, encode(SENTS, bert, "mean"), atol=1e-5)


def test_cli_crlf_input_and_files(cli, tiny_bert, tmp_path, bert):
    src = tmp_path / "s.txt"
    src.write_bytes(("\r\n".join(SENTS) + "\r\n").encode())
    out = tmp_path / "v.npy"
    result = cli("encode", "-m", tiny_bert, "-i", src, "-o", out, "--normalize", "--pooling", "mean")
    assert result.exit_code == 0, result.stderr
    np.testing.assert_allclose(np.load(out), encode(SENTS, bert, "mean", normalize_embeddings=True), atol=1e-5)


def test_cli_honours_a_sentence_transformers_normalize_module(cli, tiny_st, tmp_path):
    """A folder whose modules.json ends in Normalize gives unit vectors by default (as sentence-transformers
    does); --no-normalize gives the raw pooled vectors; the .h5 says which and why."""
    raw = encode(SENTS, load_model(tiny_st, "cpu"))  # the Transformer + Pooling modules alone
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-3)  # so normalising is visible

    default = cli("encode", "-m", tiny_st, input="\n".join(SENTS) + "\n")
    assert default.exit_code == 0, default.stderr
    np.testing.assert_allclose(npy(default), raw / np.linalg.norm(raw, axis=1, keepdims=True), atol=1e-5)
    assert "normalised: the model folder's Normalize module" in default.stderr

    off = cli("encode", "-m", tiny_st, "--no-normalize", input="\n".join(SENTS) + "\n")
    assert off.exit_code == 0, off.stderr
    np.testing.assert_allclose(npy(off), raw, atol=1e-5)
    assert "not normalised: --no-normalize" in off.stderr

    for flag, normalized, by in (
        ((), True, "the model folder's Normalize module"),
        (("--no-normalize",), False, "--no-normalize"),
    ):
        out = tmp_path / f"v{len(flag)}.h5"
        assert cli("encode", "-m", tiny_st, "-i", "-", "-o", out, *flag, input="\n".join(SENTS)).exit_code == 0
        with h5py.File(out, "r") as h5:
            assert bool(h5.attrs["normalized"]) is normalized
            assert json.loads(h5.attrs["encoding"])["normalization"] == {"normalized": normalized, "by": by}


def test_cli_plain_transformers_folder_is_not_normalized_by_default(cli, tiny_bert, bert, tmp_path):
    out = tmp_path / "v.h5"
    result = cli("encode", "-m", tiny_bert, "-i", "-", "-o", out, input="\n".join(SENTS))
    assert result.exit_code == 0, result.stderr
    with h5py.File(out, "r") as h5:
        np.testing.assert_allclose(h5["vectors"][()], encode(SENTS, bert), atol=1e-5)
        assert not h5.attrs["normalized"]
        assert json.loads(h5.attrs["encoding"])["normalization"] == {
            "normalized": False,
            "by": "the model folder has no Normalize module",
        }


def test_cli_normalize_comes_after_the_post_processing(cli, tiny_st, tmp_path):
    """--post is fitted on and applied to the raw vectors; the folder's Normalize comes last."""
    from defsent_cli.space.postprocess import parse_post

    raw = encode(SENTS, load_model(tiny_st, "cpu"))
    expected = parse_post(["zscore"]).fit_transform(raw)
    result = cli("encode", "-m", tiny_st, "--post", "zscore", input="\n".join(SENTS) + "\n")
    assert result.exit_code == 0, result.stderr
    np.testing.assert_allclose(npy(result), expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-5)
    fit = tmp_path / "fit.txt"
    fit.write_text("\n".join(SENTS[::-1] + ["one more sentence to fit on"]) + "\n")
    fitted = parse_post(["zscore"]).fit(
        encode(SENTS[::-1] + ["one more sentence to fit on"], load_model(tiny_st, "cpu"))
    )
    on = cli("encode", "-m", tiny_st, "--post", "zscore", "--fit-on", fit, input="\n".join(SENTS) + "\n")
    assert on.exit_code == 0, on.stderr
    chained = fitted.transform(raw)
    np.testing.assert_allclose(npy(on), chained / np.linalg.norm(chained, axis=1, keepdims=True), atol=1e-5)


def test_cli_blank_line_names_the_line(cli, tiny_bert):
    result = cli("encode", "-m", tiny_bert, input="a dog\n\na cat\n")
    assert result.exit_code == 2
    assert "<stdin>:2:" in result.stderr and "--skip-blank" in result.stderr
    assert "Traceback" not in result.stderr
    ok = cli("encode", "-m", tiny_bert, "--skip-blank", input="a dog\n\na cat\n")
    assert ok.exit_code == 0 and npy(ok).shape == (2, 32)


def test_cli_jsonl_field_and_h5_jsonl_outputs(cli, tiny_bert, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": s}) + "\n" for i, s in enumerate(SENTS)))
    h5_out, jsonl_out = tmp_path / "v.h5", tmp_path / "v.jsonl"
    assert cli("encode", "-m", tiny_bert, "-i", src, "--field", "text", "-o", h5_out).exit_code == 0
    with h5py.File(h5_out) as h5:
        assert h5["vectors"].shape == (5, 32)
        assert [t.decode() for t in h5["texts"][()]] == SENTS
        assert h5.attrs["pooling"] == "cls"  # a plain BERT folder pools CLS, as DefSent+
    assert cli("encode", "-m", tiny_bert, "-i", src, "--field", "text", "-o", jsonl_out).exit_code == 0
    rows = [json.loads(line) for line in jsonl_out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5] and "text" not in rows[0] and len(rows[0]["embedding"]) == 32
    bad = cli("encode", "-m", tiny_bert, "-i", src, "--field", "sentence")
    assert bad.exit_code == 2 and "in.jsonl:1: no field 'sentence'" in bad.stderr


def test_cli_refuses_to_overwrite_and_bad_suffix(cli, tiny_bert, tmp_path):
    out = tmp_path / "v.npy"
    out.write_bytes(b"keep")
    result = cli("encode", "-m", tiny_bert, "-o", out, input="a dog\n")
    assert result.exit_code == 2 and "--force" in result.stderr
    assert out.read_bytes() == b"keep"
    assert cli("encode", "-m", tiny_bert, "-o", out, "--force", input="a dog\n").exit_code == 0
    assert np.load(out).shape == (1, 32)
    bad = cli("encode", "-m", tiny_bert, "-o", tmp_path / "v.csv", input="a dog\n")
    assert bad.exit_code == 2 and "unknown output suffix" in bad.stderr


def test_cli_bad_model_and_pooling(cli, tmp_path, tiny_bert):
    result = cli("encode", "-m", tmp_path / "nope", input="a dog\n")
    assert result.exit_code == 2 and "no such folder" in result.stderr and "Traceback" not in result.stderr
    result = cli("encode", "-m", tiny_bert, "--pooling", "avg", input="a dog\n")
    assert result.exit_code == 2 and "'avg' is not one of 'cls'" in result.stderr


def test_cli_help_and_version(cli):
    result = cli("--help")
    assert result.exit_code == 0
    for name in ("build-dict", "encode", "embed-entries"):
        assert name in result.stdout
    assert cli("--version").stdout.startswith("defsent ")


def test_length_batches_cut_at_length_changes():
    from defsent_cli.encoder.tokenize import length_batches

    lengths = [5, 5, 5, 3, 3, 9, 9, 9, 9, 1, 7]
    batches = length_batches(lengths, 4)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths))) and all(len(b) <= 4 for b in batches)
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)  # longest first
    # full batches of one length; a batch closes at a length change once it is half full
    assert [[lengths[i] for i in b] for b in batches] == [[9, 9, 9, 9], [7, 5, 5, 5], [3, 3], [1]]


# ---------------------------------------------------------------- text in, text out (issue 69 item 3)


def test_texts_as_arguments_and_jsonl_json_rows_on_stdout(cli, tiny_bert, tmp_path):
    reference = npy(cli("encode", "-m", tiny_bert, input="".join(s + "\n" for s in SENTS[:3])))
    rows = [json.loads(line) for line in cli("encode", "-m", tiny_bert, *SENTS[:3], "-f", "jsonl").stdout.splitlines()]
    assert [r["id"] for r in rows] == [1, 2, 3] and all("text" not in r for r in rows)
    assert np.array_equal(np.array([r["embedding"] for r in rows], dtype=np.float32), reference)
    stored = json.loads(cli("encode", "-m", tiny_bert, *SENTS[:3], "-f", "json", "--store-text").stdout)
    assert [r["text"] for r in stored] == SENTS[:3] and [r["id"] for r in stored] == [1, 2, 3]
    assert np.array_equal(np.array([r["embedding"] for r in stored], dtype=np.float32), reference)
    as_npy = cli("encode", "-m", tiny_bert, *SENTS[:3])  # stdout is no terminal here: npy
    assert np.array_equal(npy(as_npy), reference)
    written = tmp_path / "v.json"
    assert cli("encode", "-m", tiny_bert, *SENTS[:3], "-o", written).exit_code == 0
    assert [r["id"] for r in json.loads(written.read_text())] == [1, 2, 3]


def test_ids_come_from_id_field_or_the_line_number(cli, tiny_bert, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"key": f"doc-{i}", "text": s}) + "\n" for i, s in enumerate(SENTS[:3])))
    rows = cli("encode", "-m", tiny_bert, "-i", src, "--field", "text", "--id-field", "key", "-f", "jsonl")
    assert [json.loads(line)["id"] for line in rows.stdout.splitlines()] == ["doc-0", "doc-1", "doc-2"]
    plain = tmp_path / "in.txt"
    plain.write_text("first\n\nthird\n")
    rows = cli("encode", "-m", tiny_bert, "-i", plain, "--skip-blank", "-f", "jsonl", "--store-text")
    assert [(r["id"], r["text"]) for r in map(json.loads, rows.stdout.splitlines())] == [(1, "first"), (3, "third")]
    missing = cli("encode", "-m", tiny_bert, "-i", src, "--field", "text", "--id-field", "nope", "-f", "jsonl")
    assert missing.exit_code == 2 and f"{src}:1: no field 'nope' (--id-field)" in missing.stderr
    alone = cli("encode", "-m", tiny_bert, "-i", plain, "--id-field", "key")
    assert alone.exit_code == 2 and "pass --field NAME too" in alone.stderr


def test_similarity_prints_the_cosine_of_every_pair(cli, tiny_bert):
    vectors = npy(cli("encode", "-m", tiny_bert, *SENTS[:3]))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    table = cli("encode", "-m", tiny_bert, *SENTS[:3], "--similarity")
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["[1]", "[2]", "[3]"] and len(lines) == 4
    for i, line in enumerate(lines[1:]):
        fields = line.split()
        assert fields[0] == f"[{i + 1}]" and line.endswith("  " + SENTS[i])
        assert np.allclose([float(x) for x in fields[1:4]], unit[i] @ unit.T, atol=6e-5)
    matrix = json.loads(cli("encode", "-m", tiny_bert, *SENTS[:3], "--similarity", "-f", "json").stdout)
    assert matrix["texts"] == SENTS[:3] and np.allclose(matrix["cosine"], unit @ unit.T, atol=1e-5)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["a", "b", "-i", "x.txt"], "as arguments or with --input, not both"),
        (["a", "-f", "h5"], "h5 cannot be written to stdout"),
        (["a", "-o", "v.npy", "-f", "jsonl"], "--format jsonl contradicts the output's suffix .npy"),
        (["a", "--similarity", "-o", "s.json"], "--similarity prints its table on stdout"),
        (["a", "--similarity", "-f", "npy"], "--similarity prints a table, or JSON with --format json"),
    ],
)
def test_contradictory_encode_options_are_one_line(cli, tiny_bert, tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.txt").write_text("a\n")
    result = cli("encode", "-m", tiny_bert, *args)
    assert result.exit_code == 2 and says in result.stderr and result.stdout == "", result.stderr
    assert not (tmp_path / "v.npy").exists() and not (tmp_path / "s.json").exists()


def test_on_a_terminal_the_default_is_jsonl_and_npy_is_refused(monkeypatch):
    from defsent_cli.cli.encode import output_format

    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert output_format(None, None, False) == "jsonl"
    with pytest.raises(DefsentError, match="binary .npy to a terminal"):
        output_format(None, "npy", False)
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    assert output_format(None, None, False) == "npy"
