"""SentEval's ``PyTorchClassifier`` + ``MLP(nhid=0)`` (senteval/tools/classifier.py), ported line by line to CPU
and today's torch: the reference the batched trainer (defsent_cli.evaluation.linear_probe) must reproduce, in
tests/test_eval_senteval.py, and the peer it is timed against, in bench/probe.py."""

from __future__ import annotations

import copy

import numpy as np
import torch


class SentEvalMLP:
    """SentEval's ``PyTorchClassifier`` + ``MLP(nhid=0)`` (senteval/tools/classifier.py), ported line by line
    to CPU and today's torch: the reference the batched trainer must reproduce."""

    def __init__(self, cfg, inputdim, nclasses, l2reg, seed=1111):
        np.random.seed(seed)
        torch.manual_seed(seed)
        self.batch_size, self.tenacity, self.epoch_size, self.max_epoch = (
            cfg.batch_size,
            cfg.tenacity,
            cfg.epoch_size,
            cfg.max_epoch,
        )
        self.model = torch.nn.Sequential(torch.nn.Linear(inputdim, nclasses))
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.loss_fn.size_average = False  # as SentEval; ignored by torch >= 1.0 (batch mean)
        optim = torch.optim.Adam if cfg.optim == "adam" else torch.optim.RMSprop
        self.optimizer = optim(self.model.parameters())
        self.optimizer.param_groups[0]["weight_decay"] = l2reg

    def fit(self, X, y, validation_data=None, validation_split=None):
        if validation_data is not None:
            trainX, trainy, (devX, devy) = X, y, validation_data
        else:
            permutation = np.random.permutation(len(X))
            cut = int(validation_split * len(X))
            trainX, trainy, devX, devy = (
                X[permutation[cut:]],
                y[permutation[cut:]],
                X[permutation[:cut]],
                y[permutation[:cut]],
            )
        trainX, trainy = torch.FloatTensor(trainX), torch.LongTensor(trainy)
        self.nepoch, best, stop, count = 0, -1, False, 0
        while not stop and self.nepoch <= self.max_epoch:
            for _ in range(self.epoch_size):
                permutation = np.random.permutation(len(trainX))
                for i in range(0, len(trainX), self.batch_size):
                    idx = torch.LongTensor(permutation[i : i + self.batch_size])
                    loss = self.loss_fn(self.model(trainX.index_select(0, idx)), trainy.index_select(0, idx))
                    self.optimizer.zero_grad()
                    loss.backward()
                    self.optimizer.step()
            self.nepoch += self.epoch_size
            accuracy = self.score(devX, devy)
            if accuracy > best:
                best, bestmodel = accuracy, copy.deepcopy(self.model)
            else:
                if count >= self.tenacity:
                    stop = True
                count += 1
        self.model = bestmodel
        return best

    def score(self, X, y):
        with torch.no_grad():
            pred = self.model(torch.FloatTensor(X)).argmax(1).numpy()
        return float(np.mean(pred == y))
