"""Pooling math against hand-computed values."""

import pytest
import torch

from defsent_cli.errors import DefsentError
from defsent_cli.pooling import POOLINGS, PoolingInput, get_pooling, masked_mean

STATES = torch.tensor(
    [
        [[1.0, 2.0], [3.0, 4.0], [100.0, -100.0]],  # last position is padding
        [[0.0, 1.0], [2.0, -3.0], [4.0, 5.0]],
    ]
)
MASK = torch.tensor([[1, 1, 0], [1, 1, 1]])
IDS = torch.tensor([[2, 7, 0], [2, 9, 9]])


def batch(mask_token_id=None):
    return PoolingInput(STATES, MASK, IDS, mask_token_id)


def test_cls_takes_first_token():
    assert get_pooling("cls")(batch()).tolist() == [[1.0, 2.0], [0.0, 1.0]]


def test_mean_ignores_padding_and_includes_special_tokens():
    assert get_pooling("mean")(batch()).tolist() == [[2.0, 3.0], [2.0, 1.0]]


def test_max_ignores_padding():
    assert get_pooling("max")(batch()).tolist() == [[3.0, 4.0], [4.0, 5.0]]


def test_prompt_takes_mask_state_and_averages_several_masks():
    # mask id 7 occurs once in row 0; mask id 9 twice in row 1 -> those rows averaged
    one = get_pooling("prompt")(PoolingInput(STATES[:1], MASK[:1], IDS[:1], 7))
    assert one.tolist() == [[3.0, 4.0]]
    two = get_pooling("prompt")(PoolingInput(STATES[1:], MASK[1:], IDS[1:], 9))
    assert two.tolist() == [[3.0, 1.0]]


def test_prompt_without_mask_in_input_is_an_error():
    with pytest.raises(DefsentError, match="lost its mask"):
        get_pooling("prompt")(batch(mask_token_id=42))


def test_masked_mean_with_weights():
    out = masked_mean(torch.tensor([[[2.0], [4.0]]]), torch.tensor([[1, 0]]))
    assert out.tolist() == [[2.0]]


def test_unknown_pooling_lists_choices():
    with pytest.raises(DefsentError, match="choose one of cls, mean, max, prompt"):
        get_pooling("avg")
    assert set(POOLINGS) >= {"cls", "mean", "max", "prompt"}
