"""Constraints declared as data (issue 57): one validator, one wording, the same verdict from the command line and
from the library."""

from __future__ import annotations

import math

import pytest
import typer.main

from defsent_cli.cli.app import app
from defsent_cli.cli.loop_options import OPTIONS
from defsent_cli.constraints import Interval, OneOf, check, check_all, problem
from defsent_cli.errors import DefsentError
from defsent_cli.training.config import CONSTRAINTS, TrainConfig


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (Interval(0, closed="right"), "a finite number > 0"),
        (Interval(0), "a finite number >= 0"),
        (Interval(0, 1, closed="left"), "a finite number in [0, 1)"),
        (Interval(0, 1, closed="neither"), "a finite number in (0, 1)"),
        (Interval(1, integer=True), "an integer >= 1"),
        (Interval(0, 2**32 - 1, integer=True), "an integer in [0, 4294967295]"),
        (Interval(high=5), "a finite number <= 5"),
        (OneOf(("bucket", "random")), "one of bucket, random"),
    ],
)
def test_each_rule_says_itself_in_words(rule, words):
    assert rule.describe() == words


@pytest.mark.parametrize(
    ("rule", "allowed", "refused"),
    [
        (Interval(0, closed="right"), [1e-9, 3.0], [0.0, -1.0, math.nan, math.inf, None, "1", True]),
        (Interval(0, 1, closed="left"), [0.0, 0.999], [1.0, -0.1, math.nan]),
        (Interval(0, 1, closed="neither"), [0.5], [0.0, 1.0]),
        (Interval(1, integer=True), [1, 7], [0, 1.5, -3]),
        (Interval(1, integer=True, optional=True), [None, 2], [0]),
        (OneOf(("a", "b"), optional=True), ["a", None], ["c", 1]),
    ],
)
def test_each_rule_allows_exactly_its_values(rule, allowed, refused):
    assert all(rule.allows(v) for v in allowed)
    assert not any(rule.allows(v) for v in refused)


def test_one_wording_for_every_refusal():
    assert problem(Interval(0, closed="right"), 0.0) == "must be a finite number > 0, got 0.0"
    assert problem(OneOf(("dot", "cosine")), "dott") == "must be one of dot, cosine, got 'dott'"
    assert problem(Interval(0), 0.0) is None
    with pytest.raises(DefsentError, match=r"^--lr must be a finite number > 0, got -1$"):
        check("--lr", Interval(0, closed="right"), -1)
    # a mapping leaves out what a run does not have; an object must have every named attribute
    check_all({"temperature": 0.05}, {"temperature": Interval(0, closed="right"), "nm_weight": Interval(0)})
    with pytest.raises(DefsentError, match="--nm-weight must be a finite number >= 0, got -1"):
        check_all({"nm_weight": -1}, {"nm_weight": Interval(0)})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"lr": 0.0}, "--lr must be a finite number > 0, got 0.0"),
        ({"warmup_ratio": 1.0}, "--warmup-ratio must be a finite number in [0, 1), got 1.0"),
        ({"batch_size": 0}, "--batch-size must be an integer >= 1, got 0"),
        ({"seed": -1}, "--seed must be an integer in [0, 4294967295], got -1"),
        ({"batching": "sorted"}, "--batching must be one of bucket, random, got 'sorted'"),
        ({"pooling": "first"}, "--pooling must be one of cls, mean, max, got 'first'"),
        ({"mlm_probability": 0.0}, "--mlm-probability must be a finite number in (0, 1), got 0.0"),
        ({"eval_on": "test"}, "--eval-on must be one of"),
    ],
)
def test_train_config_checks_its_fields_against_the_declared_constraints(changes, message):
    with pytest.raises(DefsentError) as caught:
        TrainConfig(**changes).validate()
    assert str(caught.value).startswith(message)


def test_every_training_command_checks_a_loop_option_as_the_library_does():
    """For each float loop option of each training command, the command line's callback refuses exactly what
    the TrainConfig constraint refuses (the probe values hand-picked around each bound); integer options carry the
    constraint's bounds as click's range."""
    group = typer.main.get_command(app)
    probes = [-1.0, 0.0, 1e-9, 0.5, 0.999, 1.0, 2.0, math.nan, math.inf]
    checked = 0
    for name in ("train", "tsdae", "simcse", "train-pairs", "teacher"):
        for param in group.commands[name].params:
            rule = CONSTRAINTS.get(param.name)
            if param.name not in OPTIONS or rule is None:
                continue
            if isinstance(rule, Interval) and not rule.integer:
                for v in probes:
                    try:
                        param.callback(None, param, v)
                        refused = False
                    except typer.BadParameter as exc:
                        refused = True
                        assert str(exc) == problem(rule, v)
                    assert refused == (not rule.allows(v)), (name, param.name, v)
                checked += 1
            elif isinstance(rule, Interval):
                assert (param.min, getattr(param, "max", None)) == (rule.low, rule.high), (name, param.name)
                checked += 1
    assert checked >= 5 * 8  # every command has at least eight numeric loop options
