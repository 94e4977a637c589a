"""The training-free toolbox through the CLI: layers, templates, Ditto, token weights, post-processing."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from defsent_cli.encoder.encode import encode
from defsent_cli.encoder.models import load_model
from defsent_cli.encoder.pooling import build_pooling

TEXTS = ["a dog runs in the park", "the cat sleeps on a mat", "two men play chess", "rain falls"]


@pytest.fixture
def sents(tmp_path):
    path = tmp_path / "sents.txt"
    path.write_text("\n".join(TEXTS) + "\n")
    return path


def run_encode(cli, model, sents, out, *options):
    result = cli("encode", "-m", model, "-i", sents, "-o", out, "--no-progress", *options)
    assert result.exit_code == 0, result.output
    return np.load(out)


def test_layers_average_hidden_states_before_pooling(cli, tiny_bert, sents, tmp_path):
    loaded = load_model(tiny_bert, "cpu")
    got = run_encode(cli, tiny_bert, sents, tmp_path / "v.npy", "--pooling", "mean", "--layers", "first-last")
    with torch.inference_mode():
        for text, vec in zip(TEXTS, got, strict=True):
            enc = loaded.tokenizer(text, return_tensors="pt")
            hs = loaded.model(**enc, output_hidden_states=True).hidden_states
            expected = ((hs[0] + hs[-1]) / 2).mean(dim=1)[0].numpy()
            assert np.allclose(vec, expected, atol=1e-5)
    alias = run_encode(cli, tiny_bert, sents, tmp_path / "w.npy", "--pooling", "first-last")
    assert np.allclose(alias, got, atol=1e-6)
    last = run_encode(cli, tiny_bert, sents, tmp_path / "x.npy", "--pooling", "mean", "--layers", "-1")
    plain = run_encode(cli, tiny_bert, sents, tmp_path / "y.npy", "--pooling", "mean")
    assert np.allclose(last, plain, atol=1e-6)


def test_ditto_matches_the_attention_diagonal_by_hand(cli, tiny_bert, sents, tmp_path):
    got = run_encode(cli, tiny_bert, sents, tmp_path / "v.npy", "--pooling", "ditto", "--ditto-head", "2-2")
    loaded = load_model(tiny_bert, "cpu")
    loaded.model.set_attn_implementation("eager")
    with torch.inference_mode():
        for text, vec in zip(TEXTS, got, strict=True):
            enc = loaded.tokenizer(text, return_tensors="pt")
            out = loaded.model(**enc, output_hidden_states=True, output_attentions=True)
            diag = torch.diagonal(out.attentions[1][0, 1])  # layer 2, head 2 (1-based)
            states = (out.hidden_states[0][0] + out.hidden_states[-1][0]) / 2
            assert np.allclose(vec, (diag[:, None] * states).sum(0).numpy(), atol=1e-5)


def test_ditto_is_batch_independent(tiny_bert):
    loaded = load_model(tiny_bert, "cpu")
    pool = build_pooling("ditto", ditto_head="1-1")
    one = encode(TEXTS, loaded, pooling=pool, batch_size=1, show_progress_bar=False)
    many = encode(TEXTS, loaded, pooling=pool, batch_size=4, show_progress_bar=False)
    assert np.abs(one - many).max() < 1e-5


def test_templates_and_prompt_avg(cli, tiny_bert, sents, tmp_path):
    t4 = run_encode(cli, tiny_bert, sents, tmp_path / "a.npy", "--pooling", "prompt", "--template", "T4")
    t0 = run_encode(cli, tiny_bert, sents, tmp_path / "b.npy", "--pooling", "prompt", "--template", "T0")
    avg = run_encode(cli, tiny_bert, sents, tmp_path / "c.npy", "--pooling", "prompt-avg", "--template", "T4")
    assert t4.shape == t0.shape == avg.shape and not np.allclose(t4, t0) and not np.allclose(t4, avg)
    own = run_encode(
        cli, tiny_bert, sents, tmp_path / "d.npy", "--pooling", "prompt", "--template", "[X] is like [MASK] ."
    )
    loaded = load_model(tiny_bert, "cpu")
    for text, vec in zip(TEXTS, own, strict=True):  # the last-layer state at the [MASK] of the user's template
        ids, states = _states(loaded, f"{text} is like {loaded.tokenizer.mask_token} .")
        np.testing.assert_allclose(vec, states[ids.index(loaded.tokenizer.mask_token_id)], atol=1e-5)


def test_weighting_and_dropped_tokens(cli, tiny_bert, sents, tmp_path):
    plain = run_encode(cli, tiny_bert, sents, tmp_path / "a.npy", "--pooling", "mean")
    idf = run_encode(cli, tiny_bert, sents, tmp_path / "b.npy", "--pooling", "mean", "--weighting", "idf")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the dog\nthe cat\nthe park\n")
    idf_c = run_encode(
        cli, tiny_bert, sents, tmp_path / "c.npy", "--pooling", "mean", "--weighting", "idf", "--idf-corpus", corpus
    )
    dropped = run_encode(cli, tiny_bert, sents, tmp_path / "d.npy", "--pooling", "mean", "--drop-tokens", "biases")
    for other in (idf, idf_c, dropped):
        assert other.shape == plain.shape and not np.allclose(other, plain)
    assert not np.allclose(idf, idf_c)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--pooling", "cls", "--template", "T4"], "--template applies"),
        (["--pooling", "mean", "--ditto-head", "1-1"], "--ditto-head applies"),
        (["--pooling", "ditto", "--ditto-head", "9-1"], "out of range"),
        (["--pooling", "mean", "--layers", "0,99"], "out of range"),
        (["--pooling", "cls", "--weighting", "idf"], "token weighting applies"),
        (["--pooling", "mean", "--weighting", "tfidf"], "'tfidf' is not one of 'idf', 'none'"),
        (["--pooling", "mean", "--drop-tokens", "stopwords"], "use biases"),
        (["--pooling", "mean", "--idf-corpus", "nowhere.txt"], "needs --weighting idf"),
        (["--pooling", "nope"], "'nope' is not one of"),
    ],
)
def test_bad_toolbox_options_are_one_line_errors(cli, tiny_bert, sents, tmp_path, options, message):
    result = cli("encode", "-m", tiny_bert, "-i", sents, "-o", tmp_path / "v.npy", *options)
    assert result.exit_code != 0
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "v.npy").exists()


def test_eval_sts_records_pooling_settings(cli, tiny_bert, mini, tmp_path):
    out = tmp_path / "sts.json"
    result = cli(
        "eval-sts", "-m", tiny_bert, "--data", mini, "--tasks", "STS-B,SICK-R", "--pooling", "prompt-avg",
        "--template", "T4", "--weighting", "idf", "-o", out, "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["pooling"] == "prompt-avg[T4]+idf"
    assert data["pooling_settings"]["weighting"]["corpus"] == "target"
    assert data["average"]["spearman"] is not None


def test_ditto_search_scores_every_head(cli, tiny_bert, mini, tmp_path):
    from defsent_cli.evaluation.ditto import all_head_vectors

    loaded = load_model(tiny_bert, "cpu")
    heads = all_head_vectors(loaded, TEXTS, "first-last", show_progress=False)
    cfg = loaded.model.config
    assert heads.shape == (cfg.num_hidden_layers, cfg.num_attention_heads, len(TEXTS), loaded.dim)
    one = encode(TEXTS, loaded, pooling=build_pooling("ditto", ditto_head="2-1"), show_progress_bar=False)
    assert np.abs(heads[1, 0] - one).max() < 1e-5

    out = tmp_path / "heads.json"
    result = cli("ditto-search", "-m", tiny_bert, "--data", mini, "-o", out, "--no-progress")
    assert result.exit_code == 0, result.output
    best = result.stdout.strip()
    rows = json.loads(out.read_text())["heads"]
    assert len(rows) == cfg.num_hidden_layers * cfg.num_attention_heads and rows[0]["head"] == best
    assert "Ditto heads on STS-B dev" in result.stderr


def test_post_target_fit_equals_manual_and_fit_post_round_trip(cli, tiny_bert, sents, tmp_path):
    from defsent_cli.space.postprocess import parse_post

    plain = run_encode(cli, tiny_bert, sents, tmp_path / "a.npy", "--pooling", "mean")
    target = run_encode(cli, tiny_bert, sents, tmp_path / "b.npy", "--pooling", "mean", "--post", "zscore,l2")
    assert np.allclose(target, parse_post("zscore,l2").fit_transform(plain), atol=1e-5)

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"sentence number {i} about {w}\n" for i, w in enumerate(["dogs", "cats", "rain"] * 4)))
    fitted_on = run_encode(
        cli, tiny_bert, sents, tmp_path / "c.npy", "--pooling", "mean", "--post", "abtt:1", "--fit-on", corpus
    )
    post = tmp_path / "post.h5"
    result = cli("fit-post", "-m", tiny_bert, "--pooling", "mean", "--post", "abtt:1", "-i", corpus, "-o", post)
    assert result.exit_code == 0, result.output
    applied = run_encode(cli, tiny_bert, sents, tmp_path / "d.npy", "--pooling", "mean", "--post-file", post)
    assert np.allclose(applied, fitted_on, atol=1e-5) and not np.allclose(applied, target)
    from defsent_cli.space.postprocess import PostChain

    chain = PostChain.load(post)
    assert chain.spec() == "abtt:1" and chain.attrs["pooling"] == "mean" and chain.fit_rows == 12


def test_eval_sts_post_is_fitted_per_task_and_recorded(cli, tiny_bert, mini, tmp_path):
    out = tmp_path / "sts.json"
    result = cli(
        "eval-sts", "-m", tiny_bert, "--data", mini, "--tasks", "STS-B,SICK-R", "--pooling", "mean",
        "--post", "whiten", "-o", out, "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["post"]["post"] == "whiten" and data["post"]["fit"].startswith("target")
    assert "fewer" in result.stderr  # 10 sentences < 4 x dims: the warning


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--post", "pca"], "zscore"),
        (["--fit-on", "x.txt"], "no such file"),
        (["--post", "whiten", "--post-file", "p.h5"], "no such file"),
    ],
)
def test_bad_post_options(cli, tiny_bert, sents, tmp_path, options, message):
    result = cli("encode", "-m", tiny_bert, "-i", sents, "-o", tmp_path / "v.npy", *options)
    assert result.exit_code != 0 and message in result.stderr and "Traceback" not in result.stderr


def _states(loaded, text: str) -> tuple[list[int], np.ndarray]:
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        return enc["input_ids"][0].tolist(), loaded.model(**enc).last_hidden_state[0].numpy()


def test_prompt_avg_and_dropped_tokens_by_hand(tiny_bert):
    from defsent_cli.encoder.pooling import TEMPLATES
    from defsent_cli.encoder.token_weights import drop_tokens_for

    loaded = load_model(tiny_bert, "cpu")
    mask = loaded.tokenizer.mask_token
    got = encode(TEXTS, loaded, pooling=build_pooling("prompt-avg", template="T0"), show_progress_bar=False)
    for text, vec in zip(TEXTS, got, strict=True):
        filled = TEMPLATES["T0"].replace("[X]", text).replace("[MASK]", mask)
        _, states = _states(loaded, filled)
        assert np.allclose(vec, states.mean(0), atol=1e-5)

    drop = drop_tokens_for(loaded.tokenizer, "biases")
    from defsent_cli.encoder.token_weights import bias_tokens

    biases = set(bias_tokens())
    texts = ["a dog runs in the park .", "the cat sleeps on a mat , quietly"]
    got = encode(texts, loaded, pooling=build_pooling("mean", weighting=drop), show_progress_bar=False)
    for text, vec in zip(texts, got, strict=True):
        ids, states = _states(loaded, text)
        tokens = loaded.tokenizer.convert_ids_to_tokens(ids)
        # kept: the special tokens and every whole word that is neither frequent nor punctuation
        keep = [
            i for i, t in enumerate(tokens)
            if t in ("[CLS]", "[SEP]") or not (t in biases or t.startswith("##") or t in (".", ","))
        ]  # fmt: skip
        assert [tokens[i] for i in keep][:3] == [
            "[CLS]",
            "r" if "runs" in text else "cat",
            "p" if "park" in text else "m",
        ]
        np.testing.assert_allclose(vec, states[keep].mean(0), atol=1e-5)


def test_layers_1_l_variant(tiny_bert):
    loaded = load_model(tiny_bert, "cpu")
    got = encode(TEXTS[:2], loaded, pooling=build_pooling("mean", layers="1,-1"), show_progress_bar=False)
    with torch.inference_mode():
        for text, vec in zip(TEXTS[:2], got, strict=True):
            hs = loaded.model(**loaded.tokenizer(text, return_tensors="pt"), output_hidden_states=True).hidden_states
            assert np.allclose(vec, ((hs[1] + hs[-1]) / 2).mean(dim=1)[0].numpy(), atol=1e-5)


def test_target_post_is_fitted_on_each_task_alone(mini):
    from defsent_cli.evaluation.correlations import correlations, cosine_pairs
    from defsent_cli.evaluation.sts import evaluate_sts
    from defsent_cli.evaluation.sts_data import load_sts_tasks, task_sentences
    from defsent_cli.space.postprocess import parse_post

    def encoder(texts):  # a fixed, text-dependent 3-d vector
        return np.asarray([[len(t), t.count(" ") + 1, sum(map(ord, t)) % 97] for t in texts], dtype=np.float32)

    tasks = load_sts_tasks(mini, ["STS-B", "SICK-R"], "test")
    result = evaluate_sts(encoder, mini, tasks, post=parse_post("zscore"))
    for task in tasks:
        texts = task_sentences(task)
        unique = list(dict.fromkeys(texts))
        fitted = parse_post("zscore").fit_transform(encoder(unique))
        rows = fitted[[unique.index(t) for t in texts]]
        n = len(task.subsets[0])
        expected, _ = correlations(cosine_pairs(rows[:n], rows[n:]), task.subsets[0].gold)
        assert result["tasks"][task.name]["spearman"] == pytest.approx(expected, abs=1e-3)


def test_post_file_pooling_mismatch_warns_and_idf_needs_a_shared_corpus(cli, tiny_bert, sents, tmp_path):
    post = tmp_path / "post.h5"
    assert (
        cli("fit-post", "-m", tiny_bert, "--pooling", "mean", "--post", "zscore", "-i", sents, "-o", post).exit_code
        == 0
    )
    result = cli(
        "encode", "-m", tiny_bert, "-i", sents, "-o", tmp_path / "v.npy", "--pooling", "cls", "--post-file", post
    )
    assert result.exit_code == 0 and "fitted on mean vectors" in result.stderr
    result = cli(
        "encode", "-m", tiny_bert, "-i", sents, "-o", tmp_path / "w.npy", "--pooling", "mean", "--weighting", "idf",
        "--post-file", post,
    )  # fmt: skip
    assert result.exit_code != 0 and "share one idf" in result.stderr
