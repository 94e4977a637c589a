"""A test-only objective (issue 57): bag-of-words reconstruction, plugged into the training loop by this one
module and its one registration, touching no file of the package (tests/test_objective_plugin.py runs it).

Each sentence's pooled vector goes through a linear decoder to one logit per vocabulary token; the loss is the
binary cross-entropy against the sentence's tokens (a multi-hot vector). The decoder trains beside the encoder
(its parameters join the optimiser, its weights the resumable state) and is not kept in the checkpoint.
"""

from __future__ import annotations

import numpy as np
import torch

from defsent_cli.constraints import Interval
from defsent_cli.encoder.pooling import PoolingInput
from defsent_cli.encoder.tokenize import pad_batch, pad_id, to_device
from defsent_cli.errors import count
from defsent_cli.training.objective import Objective, register
from defsent_cli.training.sentences import sample_sentences, sentence_data
from defsent_cli.training.specs import ObjectiveSpec

#: its declarations, torch-free: name and kind, its one setting's default and rule (checked by Objective.check),
#: its loop defaults (over the loop's neutral ones: Objective.config(), objective_fit without a config)
BAG_OF_WORDS = ObjectiveSpec(
    name="bag-of-words",
    kind="bag-of-words",
    settings={"positive_weight": 1.0},
    constraints={"positive_weight": Interval(0, closed="right")},
    loop={"lr": 1e-3},
    item="sentence",
)


@register
class BagOfWords(Objective):
    spec = BAG_OF_WORDS

    def __init__(self, positive_weight: float = BAG_OF_WORDS.settings["positive_weight"]):
        self.positive_weight = positive_weight  # its settings() and record: each spec setting's attribute

    def read(self, path, config):
        return sample_sentences(path, "train", config)

    def setup(self, run, texts) -> None:
        run.data = sentence_data(texts, run.loaded.tokenizer, run.pool, run.max_length)
        self.vocab = len(run.loaded.tokenizer)
        self.decoder = torch.nn.Linear(run.loaded.dim, self.vocab).to(run.device)

    def modules(self) -> dict:
        return {"decoder": self.decoder}

    def loss(self, run, index: np.ndarray) -> torch.Tensor:
        ids, mask = pad_batch([run.data.token_ids[i] for i in index], pad_id(run.loaded.tokenizer))
        ids, mask = to_device(ids, run.device), to_device(mask, run.device)
        states = run.net(input_ids=ids, attention_mask=mask).last_hidden_state
        logits = self.decoder(run.pool(PoolingInput(states, mask, ids)))
        target = torch.zeros_like(logits).scatter_(1, ids, 1.0)
        weight = torch.tensor(self.positive_weight, device=run.device)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, target, pos_weight=weight)

    def describe(self, run) -> str:
        return f"bag of words: {run.base_model} on {count(len(run.data), 'sentence')}, {count(run.total_steps, 'step')}"
