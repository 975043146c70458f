"""Whole pages, scored by OmniDocBench's own end-to-end scorer, beside GPT-4o's shipped pages.

    .venv/bin/python benchmarks/bench_pages.py [--workflow FILE] [--set english all]
        [--keep FOLDER] [--json] [--scorer-python PY]

The pages: `../shared/bench/omnidocbench/demo_data/omnidocbench_demo/images/*.jpg` (18 pages of
9 kinds; 7 English). Each page goes through the workflow (default: High Res partition with
tables, `ocr_languages` by the page's language) with `ingestflow.run`, one job per language,
and each document's output is written as Markdown by `ingestflow.markdown.to_markdown` (what
`ingestflow jobs download --format markdown` writes). The official `pdf_validation.py`
(end2end, `quick_match`) then scores our folder and GPT-4o's (`demo_data/end2end`) in the same
sitting: text-block edit distance, display-formula edit distance, table TEDS and
reading-order edit distance (lower is better, but TEDS). Formula CDM is left out: it needs
TeX Live, ImageMagick and node.

The scorer runs in a venv of its own (its pins clash with the project's):
`bash benchmarks/scorer-venv.sh` makes `.scorer-venv/` (PyPI, ~2 min), found by default.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
BENCH = REPO.parent / "shared" / "bench" / "omnidocbench"
DEMO = BENCH / "demo_data" / "omnidocbench_demo"
GPT4O = BENCH / "demo_data" / "end2end"
#: OmniDocBench's page languages → the workflow's `ocr_languages`.
LANGUAGES = {
    "english": ["eng"],
    "simplified_chinese": ["chi_sim", "eng"],
    "en_ch_mixed": ["chi_sim", "eng"],
}
SCORER_PARTS = ["registry", "dataset", "task", "metrics", "utils", "pdf_validation.py"]


def default_workflow(languages: list[str]) -> dict[str, Any]:
    return {
        "name": "bench_pages: High Res, tables",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {
                    "strategy": "hi_res",
                    "infer_table_structure": True,
                    "pdf_infer_table_structure": True,
                    "coordinates": True,
                    "ocr_languages": languages,
                },
            }
        ],
    }


def pages() -> dict[str, str]:
    """Page image name → its language, from the ground truth."""
    truth = json.loads((DEMO / "OmniDocBench_demo.json").read_text(encoding="utf-8"))
    return {
        Path(p["page_info"]["image_path"]).name: p["page_info"]["page_attribute"]["language"]
        for p in truth
    }


def read_pages(
    workflow: dict[str, Any] | None, target: Path, workers: int, english_only: bool
) -> dict[str, Any]:
    """Run the pages through the workflow; one Markdown file per page into `target`."""
    import ingestflow
    from ingestflow.markdown import to_markdown

    by_language: dict[str, list[str]] = {}
    for name, language in pages().items():
        if english_only and language != "english":
            continue
        by_language.setdefault(language, []).append(name)
    target.mkdir(parents=True, exist_ok=True)
    seconds = 0.0
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-pages-") as scratch:
        for language, names in sorted(by_language.items()):
            folder = Path(scratch) / language
            folder.mkdir()
            for name in names:
                shutil.copyfile(DEMO / "images" / name, folder / name)  # the source skips links
            wf = workflow or default_workflow(LANGUAGES.get(language, ["eng"]))
            began = time.perf_counter()
            result = ingestflow.run(
                wf,
                [folder],
                workspace=Path(scratch) / "ws",
                output=Path(scratch) / f"out-{language}",
                workers=workers,
                cache=False,
                trace=False,
            )
            seconds += time.perf_counter() - began
            for entry in result.job["files"]:
                name = Path(entry["filename"]).name
                if entry["status"] != "SUCCESS":
                    failed.append(f"{name}: {entry['error']}")
                    continue
                elements = json.loads(Path(entry["output"]).read_text(encoding="utf-8"))
                (target / (Path(name).stem + ".md")).write_text(
                    to_markdown(elements), encoding="utf-8"
                )
    count = sum(len(names) for names in by_language.values())
    if len(list(target.glob("*.md"))) + len(failed) != count:
        raise SystemExit(f"{count} pages went in, {len(list(target.glob('*.md')))} came out")
    return {
        "pages": count,
        "seconds": round(seconds, 1),
        "pages_per_s": round(count / seconds, 3),
        "failed": failed,
    }


def score(predictions: Path, language: str | None, python: str) -> dict[str, Any]:
    """The official end-to-end figures of one folder of page Markdown (`language`: a filter)."""
    with tempfile.TemporaryDirectory(prefix="bench-pages-score-") as scratch:
        root = Path(scratch)
        for part in SCORER_PARTS:
            (root / part).symlink_to(BENCH / part)
        (root / "result").mkdir()
        name = predictions.name
        dataset: dict[str, Any] = {
            "dataset_name": "end2end_dataset",
            "ground_truth": {"data_path": str(DEMO / "OmniDocBench_demo.json")},
            "prediction": {"data_path": str(predictions)},
            "match_method": "quick_match",
        }
        if language:
            dataset["filter"] = {"language": language}
        config = {
            "end2end_eval": {
                "metrics": {
                    "text_block": {"metric": ["Edit_dist"]},
                    "display_formula": {"metric": ["Edit_dist"]},
                    "table": {"metric": ["TEDS", "Edit_dist"]},
                    "reading_order": {"metric": ["Edit_dist"]},
                },
                "dataset": dataset,
            }
        }
        (root / "config.json").write_text(json.dumps(config), encoding="utf-8")  # YAML ⊇ JSON
        done = subprocess.run(
            [python, "pdf_validation.py", "--config", "config.json"],
            cwd=root,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        found = root / "result" / f"{name}_quick_match_metric_result.json"
        if done.returncode != 0 or not found.exists():
            raise SystemExit(f"the scorer failed ({done.returncode}): {done.stderr[-2000:]}")
        figures = json.loads(found.read_text(encoding="utf-8"))
    return _summary(figures)


def _summary(figures: dict[str, Any]) -> dict[str, Any]:
    """The headline figures: each metric's mean over all its samples."""

    def pick(element: str, metric: str) -> float | None:
        value = figures.get(element, {}).get("all", {}).get(metric, {}).get("ALL_page_avg")
        if value is None:
            value = figures.get(element, {}).get("all", {}).get(metric, {}).get("all")
        return round(value, 3) if isinstance(value, (int, float)) else None

    return {
        "text_edit": pick("text_block", "Edit_dist"),
        "formula_edit": pick("display_formula", "Edit_dist"),
        "table_teds": pick("table", "TEDS"),
        "table_edit": pick("table", "Edit_dist"),
        "reading_order_edit": pick("reading_order", "Edit_dist"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workflow", type=Path, help="a workflow JSON (default: High Res)")
    parser.add_argument("--set", nargs="+", default=["english", "all"], choices=["english", "all"])
    parser.add_argument("--keep", type=Path, help="write our page Markdown here and keep it")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scorer-python", default=str(REPO / ".scorer-venv" / "bin" / "python"))
    parser.add_argument("--score-only", type=Path, help="score this folder of Markdown only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not BENCH.exists():
        raise SystemExit(f"the benchmark is not here: {BENCH}")
    if not Path(args.scorer_python).exists():
        raise SystemExit("no scorer venv: run `bash benchmarks/scorer-venv.sh` first")
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d")}
    with tempfile.TemporaryDirectory(prefix="bench-pages-md-") as scratch:
        ours = args.score_only or args.keep or Path(scratch) / "ingestflow"
        if not args.score_only:
            workflow = json.loads(args.workflow.read_text()) if args.workflow else None
            report["run"] = read_pages(workflow, ours, args.workers, args.set == ["english"])
        for subset in args.set:
            language = None if subset == "all" else subset
            report[subset] = {
                "ingestflow": score(ours, language, args.scorer_python),
                "gpt-4o": score(GPT4O, language, args.scorer_python),
            }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    run = report.get("run")
    if run:
        print(f"{run['pages']} pages in {run['seconds']} s ({run['pages_per_s']} pages/s)")
        for line in run["failed"]:
            print(f"  failed: {line}")
    for subset in args.set:
        print(f"\n{subset} pages        text   formula  TEDS   table-edit  order")
        for who, row in report[subset].items():
            cells = [
                row[k]
                for k in (
                    "text_edit",
                    "formula_edit",
                    "table_teds",
                    "table_edit",
                    "reading_order_edit",
                )
            ]
            print(f"  {who:<12} " + "  ".join(f"{c!s:>7}" for c in cells))


if __name__ == "__main__":
    main()
