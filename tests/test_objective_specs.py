"""One home per default (issue 77): each objective's spec (``training/specs.py``) holds its loop defaults and its own
settings' defaults, and the command line, ``--help`` and the library all read it, so an objective's command with no
option given and the library with no setting given run with the very same settings; ``TrainConfig()`` alone is
the loop's neutral defaults.

Each run is stopped where the run would start (the loop's set-up is replaced by one that records what it was
handed), so nothing trains: what is compared is every setting the run records (``defsent.json``'s ``config``: the
loop's and the objective's, as ``Loop.run_settings`` makes it) and the auxiliary +NM term."""

from __future__ import annotations

import json
from dataclasses import asdict, fields

import pytest
from conftest import CORPUS, build_mini

from defsent_cli.training import loop as loop_module
from defsent_cli.training.config import TrainConfig
from defsent_cli.training.objective import OBJECTIVES
from defsent_cli.training.specs import NEUTRAL, SPECS


class Started(BaseException):
    """Raised where the run would set up: through the command line's boundary, which turns errors into lines."""


@pytest.fixture
def started(monkeypatch):
    """Every run's (objective, effective settings, its run-wide terms: +NM and --matryoshka), recorded where the run
    would load the model."""
    runs = []

    class Recorder:
        def __init__(self, objective, data, base_model, config, nm=None, matryoshka=None):
            objective.check(config)  # as the run does first (it resolves what follows the settings: simcse's MLP)
            runs.append((objective, {**asdict(config), **objective.settings()}, (nm, matryoshka)))
            raise Started

    monkeypatch.setattr(loop_module, "Loop", Recorder)
    return runs


@pytest.fixture
def inputs(tmp_path, tiny_dict, monkeypatch):
    """A dictionary, a bank file (never read: the run stops before), sentences, scored pairs, and the SentEval data
    the pair objectives' dev evaluation (after every epoch, by default) loads before the run starts."""
    monkeypatch.setenv("DEFSENT_DATA", str(build_mini(tmp_path / "data") / "senteval"))
    bank = tmp_path / "bank.h5"
    bank.write_bytes(b"")
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("".join(line + "\n" for line in CORPUS))
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{CORPUS[i]}\t{CORPUS[i + 1]}\t{i % 5}.0\n" for i in range(8)))
    return {"dictionary": tiny_dict, "bank": bank, "sentences": sentences, "pairs": pairs}


#: Each case: the objective, the variant (its --objective) or None, the data file's key, the command line's
#: inputs beside the data (not settings); every objective of the package and every variant.
CASES = [
    ("train", None, "dictionary", ["--bank", "bank"]),
    ("train", "defsent", "dictionary", []),
    ("tsdae", None, "sentences", []),
    ("simcse", None, "sentences", []),
    ("simcse", "nm", "sentences", []),
    ("train-pairs", None, "pairs", []),
    ("teacher", None, "pairs", []),
]


def test_the_cases_cover_every_objective_the_package_registers():
    assert {name for name, *_ in CASES} == set(SPECS)
    assert all(variant in SPECS[name].variants or variant in SPECS[name].constraints["objective"].choices()
               for name, variant, *_ in CASES if variant)  # fmt: skip


@pytest.mark.parametrize(("name", "variant", "data", "extra"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_the_command_and_the_library_run_with_the_same_settings(
    name, variant, data, extra, cli, started, inputs, tiny_st, tmp_path
):
    """No option given on the command line, no setting given to the library: the same run."""
    args = [inputs.get(a, a) for a in extra] + (["--objective", variant] if variant else [])
    with pytest.raises(Started):
        cli(name, inputs[data], "-m", tiny_st, *args, "-o", tmp_path / "cli", "--no-progress")
    from defsent_cli.training.run import objective_fit

    own = {"objective": variant} if variant else {}
    if name == "train":  # its input beside the data: the bank (DefSent's word prediction has none)
        own["bank"] = None if variant == "defsent" else inputs["bank"]
    library = OBJECTIVES[name](**own)
    with pytest.raises(Started):
        objective_fit(library, inputs[data], tiny_st, tmp_path / "library")
    (command, by_command, nm_command), (objective, by_library, nm_library) = started
    assert type(command) is type(objective) is OBJECTIVES[name] and OBJECTIVES[name].spec is SPECS[name]
    assert json.dumps(by_command, sort_keys=True) == json.dumps(by_library, sort_keys=True)
    assert nm_command == nm_library == (None, None)
    # the loop's settings are the spec's (its variant's), over the neutral ones; the pooling the model's own (mean)
    spec = SPECS[name]
    expected = spec.loop_defaults(variant)
    expected["pooling"] = spec.pooling or "mean"
    assert {k: by_library[k] for k in NEUTRAL} == expected
    # and its own settings the spec's (a setting the objective resolves or leaves out aside)
    own_settings = {k: v for k, v in spec.settings.items() if k in by_library and by_library[k] is not None}
    assert all(by_library[k] == v for k, v in own_settings.items() if k not in ("objective", "mlp")), own_settings


def test_a_given_setting_wins_over_the_spec_in_the_library_and_on_the_command_line(
    cli, started, inputs, tiny_st, tmp_path
):
    from defsent_cli.training.run import objective_fit

    with pytest.raises(Started):
        cli("tsdae", inputs["sentences"], "-m", tiny_st, "--lr", "1e-3", "-p", "cls", "-o", tmp_path / "cli")
    tsdae = OBJECTIVES["tsdae"]()
    with pytest.raises(Started):
        objective_fit(
            tsdae, inputs["sentences"], tiny_st, tmp_path / "lib", tsdae.config(tiny_st, lr=1e-3, pooling="cls")
        )
    (_, by_command, _), (_, by_library, _) = started
    assert by_command == by_library and by_library["lr"] == 1e-3 and by_library["batch_size"] == 8


def test_a_train_config_alone_is_the_loops_neutral_defaults():
    """TrainConfig() is no objective's: the neutral defaults, which the shared loop options show too."""
    from defsent_cli.cli.loop_options import OPTIONS

    assert asdict(TrainConfig()) == NEUTRAL == {f.name: f.default for f in fields(TrainConfig)}
    assert (NEUTRAL["adam_eps"], NEUTRAL["batching"]) == (1e-8, "random")
    assert all(OPTIONS[name].default == NEUTRAL[name] for name in OPTIONS if name in NEUTRAL)
    # an objective's defaults differ from them where its reference does, and only there
    assert SPECS["tsdae"].config(lr=1e-3).lr == 1e-3 and SPECS["tsdae"].config().schedule == "constant"
    assert SPECS["train"].config("defsent").max_grad_norm == 0.0 and SPECS["train"].config().adam_eps == 1e-6


def test_the_run_its_state_and_the_checkpoint_name_no_objective():
    """Where the package needs every objective it asks the objective (its spec, its hooks): the run, the resumable
    state and the checkpoint's writer know none by name."""
    from conftest import REPO

    for path in ("training/run.py", "training/state.py", "formats/checkpoint.py"):
        text = (REPO / "defsent_cli" / path).read_text(encoding="utf-8").lower()
        named = [word for word in ("tsdae", "simcse", "deletion", "contrastive") if word in text]
        assert not named, f"{path} names {named}"
