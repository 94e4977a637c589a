"""A fitted post-processing chain (docs/formats.md, "Post-processing file"): HDF5, format
``defsent-post/1``. Root attributes: ``spec`` (the chain, e.g. ``zscore,abtt:2``), ``fit_rows``,
``fit_dims`` and provenance (model, pooling, fit corpus); one group ``step-<i>-<name>`` per step
holding its fitted arrays, with the step's parameters as attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DefsentError
from ..io import hdf5_output

POST_FORMAT = "defsent-post/1"


@dataclass
class FittedStep:
    name: str
    params: dict[str, Any]
    arrays: dict[str, np.ndarray]


@dataclass
class PostFile:
    spec: str
    steps: list[FittedStep]
    fit_rows: int
    fit_dims: int
    attrs: dict[str, Any] = field(default_factory=dict)


def write_post(path: str | Path, post: PostFile) -> None:
    """Write atomically; attribute values that HDF5 cannot hold as they are become strings."""

    extra = {key: v if isinstance(v, (str, int, float, bool)) else str(v) for key, v in post.attrs.items()}
    with hdf5_output(path) as h5:
        h5.attrs.update({**extra, "format": POST_FORMAT, "spec": post.spec})
        h5.attrs.update({"fit_rows": post.fit_rows, "fit_dims": post.fit_dims})
        for i, step in enumerate(post.steps):
            group = h5.create_group(f"step-{i}-{step.name}")
            group.attrs.update({"name": step.name, **step.params})
            for key, value in step.arrays.items():
                group.create_dataset(key, data=value)


def read_post(path: str | Path) -> PostFile:
    """Read a file written by :func:`write_post`; anything else is a one-line error naming the file."""
    import h5py

    if not Path(path).is_file():
        raise DefsentError("no such post-processing file", path=path)
    try:
        with h5py.File(path, "r") as h5:
            attrs = {key: value.item() if isinstance(value, np.generic) else value for key, value in h5.attrs.items()}
            if attrs.get("format") != POST_FORMAT:
                raise DefsentError(f"not a defsent post-processing file (format {POST_FORMAT})", path=path)
            steps = []
            for name in sorted(h5, key=lambda g: int(g.split("-")[1])):
                group = h5[name]
                params = {k: v.item() if isinstance(v, np.generic) else v for k, v in group.attrs.items()}
                steps.append(FittedStep(str(params.pop("name")), params, {k: d[()] for k, d in group.items()}))
            spec = str(attrs.pop("spec"))
            fit_rows, fit_dims = int(attrs.pop("fit_rows")), int(attrs.pop("fit_dims"))
    except (OSError, KeyError, ValueError, IndexError) as exc:
        raise DefsentError(f"not a readable defsent post-processing file ({exc})", path=path) from None
    attrs.pop("format", None)
    return PostFile(spec, steps, fit_rows, fit_dims, attrs)
