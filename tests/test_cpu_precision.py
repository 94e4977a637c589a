"""``--precision auto`` on the CPU (issue 72): bf16 autocast where the CPU has AMX bf16, fp32 elsewhere, the
user's explicit ``--precision`` always first. The detection is torch's (``torch.cpu``), stubbed here both ways:
nothing in the suite depends on this machine having AMX (conftest.py sets ``DEFSENT_CPU_AMX=0`` for the rest)."""

from __future__ import annotations

import json

import pytest
import torch

from defsent_cli.encoder import precision


@pytest.fixture
def amx(monkeypatch):
    """Set what the detection finds: the environment variable cleared, torch's two probes stubbed."""

    def stub(tiles: bool, bf16: bool) -> None:
        monkeypatch.delenv(precision.AMX_ENV, raising=False)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: tiles)
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16)

    return stub


@pytest.mark.parametrize(("tiles", "bf16", "found"), [(True, True, True), (False, True, False), (True, False, False)])
def test_amx_bf16_is_detected_by_torchs_probes(amx, tiles, bf16, found):
    amx(tiles, bf16)
    assert precision.cpu_amx_bf16() is found


def test_the_environment_variable_overrides_the_probes(amx, monkeypatch):
    amx(True, True)
    monkeypatch.setenv(precision.AMX_ENV, "0")
    assert precision.cpu_amx_bf16() is False
    amx(False, False)
    monkeypatch.setenv(precision.AMX_ENV, "1")
    assert precision.cpu_amx_bf16() is True


@pytest.mark.parametrize(("has_amx", "chosen"), [(True, "bf16"), (False, "fp32")])
def test_auto_is_bf16_on_an_amx_cpu_and_fp32_elsewhere(amx, has_amx, chosen):
    amx(has_amx, has_amx)
    assert precision.resolve_train_precision("auto", "cpu") == chosen
    for explicit in ("fp32", "bf16"):  # the user's choice wins either way
        assert precision.resolve_train_precision(explicit, "cpu") == explicit


@pytest.mark.parametrize("has_amx", [True, False])
def test_a_training_run_records_and_says_the_precision_auto_chose(amx, has_amx, cli, tiny_bert, tiny_dict, tmp_path):
    amx(has_amx, has_amx)
    bank = tmp_path / "bank.h5"
    assert cli("embed-entries", tiny_dict, "-m", tiny_bert, "-o", bank).exit_code == 0
    args = ["train", tiny_dict, "--bank", bank, "-m", tiny_bert, "--max-steps", "2", "-b", "2", "--device", "cpu"]
    auto = cli(*args, "-o", tmp_path / "auto")
    assert auto.exit_code == 0, auto.stderr
    info = json.loads((tmp_path / "auto" / "defsent.json").read_text())
    assert info["precision"] == ("bf16" if has_amx else "fp32") and info["config"]["precision"] == "auto"
    assert ("bf16 mixed precision (--precision auto: this CPU has AMX)" in auto.stderr) is has_amx
    explicit = cli(*args, "--precision", "fp32", "-o", tmp_path / "fp32")
    assert explicit.exit_code == 0, explicit.stderr
    assert json.loads((tmp_path / "fp32" / "defsent.json").read_text())["precision"] == "fp32"
    assert "mixed precision" not in explicit.stderr
