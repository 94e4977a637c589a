"""Pooling math against hand-computed values."""

import numpy as np
import pytest
import torch

from defsent_cli.encoder.pooling import POOLINGS, PoolingInput, get_pooling, masked_mean
from defsent_cli.errors import DefsentError

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


# ---------------------------------------------------------------- the training-free toolbox (issue 8)


def test_weighted_mean_rescales_weights_to_one():
    # row 0: weights 1 and 3 over the two real tokens -> (1*[1,2] + 3*[3,4]) / 4
    weights = torch.tensor([[1.0, 3.0, 5.0], [0.0, 1.0, 1.0]])
    out = get_pooling("mean")(PoolingInput(STATES, MASK, IDS, None, weights))
    assert out.tolist() == [[2.5, 3.5], [3.0, 1.0]]


def test_max_skips_zero_weight_tokens():
    weights = torch.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    out = get_pooling("max")(PoolingInput(STATES, MASK, IDS, None, weights))
    assert out.tolist() == [[1.0, 2.0], [2.0, 1.0]]


def test_ditto_is_diagonal_weighted_sum_without_division():
    diag = torch.tensor([[0.5, 0.25, 0.9], [0.1, 0.2, 0.3]])  # padding's 0.9 must not count
    out = get_pooling("ditto")(PoolingInput(STATES, MASK, IDS, None, None, diag))
    # row 0: 0.5*[1,2] + 0.25*[3,4] = [1.25, 2.0]; row 1: 0.1*[0,1] + 0.2*[2,-3] + 0.3*[4,5] = [1.6, 1.0]
    assert torch.allclose(out, torch.tensor([[1.25, 2.0], [1.6, 1.0]]))


def test_prompt_avg_is_mean_over_the_templated_input():
    from defsent_cli.encoder.pooling import PROMPT_TEMPLATE

    pool = get_pooling("prompt-avg")
    assert pool.template == PROMPT_TEMPLATE and pool(batch()).tolist() == [[2.0, 3.0], [2.0, 1.0]]


def test_layer_specs_and_aliases():
    from defsent_cli.encoder.pooling import parse_layers, resolve_layers

    assert parse_layers("first-last") == (0, -1) and parse_layers("1,12") == (1, 12) and parse_layers(None) is None
    assert resolve_layers((0, -1), 12) == (0, 12) and resolve_layers((1, -2), 6) == (1, 5)
    with pytest.raises(DefsentError, match="out of range for a 6-layer model"):
        resolve_layers((7,), 6)
    with pytest.raises(DefsentError, match="comma-separated"):
        parse_layers("first,last")


def test_build_pooling_checks_combinations():
    from defsent_cli.encoder.pooling import TEMPLATES, build_pooling
    from defsent_cli.encoder.token_weights import IdfWeighting

    assert build_pooling("prompt-avg", template="T4").template == TEMPLATES["T4"]
    assert build_pooling("ditto", ditto_head="3-7").ditto_head == (2, 6)
    assert build_pooling("mean", layers="1,6").label == "mean[layers 1,6]"
    assert build_pooling("prompt-avg", template="T4").label == "prompt-avg[T4]"
    assert build_pooling("mean", weighting=IdfWeighting()).label == "mean+idf"
    for kwargs, message in [
        ({"name": "cls", "template": "T4"}, "--template applies"),
        ({"name": "mean", "ditto_head": "1-1"}, "--ditto-head applies"),
        ({"name": "ditto", "ditto_head": "0-1"}, "1-based"),
        ({"name": "prompt", "layers": "0,1"}, "does not apply to prompt"),
        ({"name": "prompt", "template": "no placeholder"}, r"\[X\] and \[MASK\]"),
        ({"name": "cls", "weighting": IdfWeighting()}, "token weighting applies"),
        ({"name": "max", "weighting": IdfWeighting()}, "only --drop-tokens"),
    ]:
        with pytest.raises(DefsentError, match=message):
            build_pooling(**kwargs)


def test_t4_prompt_averages_its_three_mask_states(tiny_bert):
    """T4 (Stankevicius & Lukosevicius 2024, Table 1) has three [MASK]s; prompt pooling averages their states."""
    import torch

    from defsent_cli.encoder.encode import encode
    from defsent_cli.encoder.models import load_model
    from defsent_cli.encoder.pooling import TEMPLATES, build_pooling

    loaded = load_model(tiny_bert, "cpu")
    mask = loaded.tokenizer.mask_token
    text = "a dog runs in the park"
    got = encode([text], loaded, pooling=build_pooling("prompt", template="T4"), show_progress_bar=False)[0]
    filled = f'This sentence from the dictionary: "{text}" means "{mask}" and is about {mask}, which is a synonym for {mask}.'
    assert TEMPLATES["T4"].replace("[X]", text).replace("[MASK]", mask) == filled
    enc = loaded.tokenizer(filled, return_tensors="pt")
    with torch.inference_mode():
        states = loaded.model(**enc).last_hidden_state[0]
    at = (enc["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero().flatten()
    assert len(at) == 3
    np.testing.assert_allclose(got, states[at].mean(0).numpy(), atol=1e-5)
