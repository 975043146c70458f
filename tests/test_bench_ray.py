"""The scale benchmark's arithmetic (`benchmarks/bench_ray.py`): the steady window, scaling
efficiency, the per-document costs and the 100-machine model docs/ray.md quotes. Synthetic
figures only: no run, no timing asserted."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_ray


def sampler(points: list[tuple[float, dict[str, float]]]) -> bench_ray.Sampler:
    s = bench_ray.Sampler(0, None, None)
    s.series = points
    return s


def test_the_steady_window_is_between_10_and_90_percent_of_the_documents() -> None:
    points = [
        (float(t), {"driver": t * 0.1, "worker": t * 1.0, "ray": 0.0, "server": 0.0, "docs": d})
        for t, d in enumerate([0, 0, 0, 5, 10, 20, 40, 60, 80, 90, 95, 100, 100])
    ]
    s = sampler(points)
    assert s.steady() == (4.0, 9.0)  # 10 documents at t=4, 90 at t=9
    window = s.window(4.0, 9.0)
    assert window["docs"] == 80 and window["worker"] == pytest.approx(5.0)
    assert s.window(4.5, 9.5) == window  # the sample nearest before each moment
    assert sampler(points[:3]).steady() is None  # too few documents for a steady part


def row(name: str, docs_per_s: float, **more: Any) -> dict[str, Any]:
    base = {"run": name, "docs": 100, "docs_per_s": docs_per_s, "docs_per_s_job": docs_per_s}
    return {**base, "steady_docs_per_s": docs_per_s, **more}


def test_scaling_efficiency_per_executor() -> None:
    results = {
        "local x1": [row("local x1", 1.0)],
        "local x2": [row("local x2", 1.8)],
        "ray x1": [row("ray x1", 0.8), row("ray x1", 1.0), row("ray x1", 0.9)],  # median 0.9
        "ray x2": [row("ray x2", 1.44)],
    }
    eff = bench_ray.summary(results)["scaling_efficiency"]
    assert eff["local"] == {"wall": 0.9, "job": 0.9, "steady": 0.9}
    assert eff["ray"]["steady"] == pytest.approx(0.8)


def test_costs_and_the_model() -> None:
    ray = row(
        "ray x2",
        1.6,
        job_cpu_workers_s=120.0,
        job_cpu_driver_s=2.0,
        job_cpu_ray_s=5.0,
        driver_share=0.02,
        steady_worker_cpu_s_per_doc=1.0,
        steady_driver_cpu_s_per_doc=0.01,
        steady_ray_cpu_s_per_doc=0.04,
        steady_server_cpu_s_per_doc=0.02,
        steady_driver_share=0.01,
        rows=2000,
        text_bytes_per_row=800,
    )
    results = {"ray x1": [row("ray x1", 0.8)], "ray x2": [ray]}
    report: dict[str, Any] = {"machine": {"cpus": 2}, **bench_ray.summary(results)}
    report["costs"] = costs = bench_ray.costs(results, report["runs"])
    assert costs["worker_cpu_s_per_doc"] == 1.0 and costs["worker_cpu_s_per_doc_job"] == 1.2
    assert costs["rows_per_doc"] == 20 and costs["server_cpu_ms_per_row"] == 1.0
    assert costs["row_bytes"] == 384 * 4 + 800 + 72
    report["probe"] = {"write_median_ms": 250}
    report["message_sizes"] = {
        "task_bytes_per_doc": 400,
        "outcome_bytes_per_doc": 600,
        "mean_file_bytes": 99_400,
    }
    report["wait_probe"] = [{"cpu_ms": 0.1}, {"cpu_ms": 1.1}]
    model = bench_ray.model(report, machines=100, cores=16)
    here, scale = model["check_here"], model["at_scale"]
    assert here["predicted_docs_per_s_x1"] == 0.8  # 1 / (w + L)
    assert here["predicted_docs_per_s_x2"] == 1.6  # min(2 / 1.25, 2 / (1 + .01 + .04 + .02))
    assert here["measured_over_predicted_x1"] == 1.0 and here["predicted_efficiency"] == 1.0
    assert scale["docs_per_s"] == 1280 and scale["docs_per_s_if_writes_overlap"] == 1600
    assert scale["actor_share_waiting_on_writes"] == 0.2
    assert scale["driver_cpu_s_per_doc"] == pytest.approx(0.011)  # d + one wait's growth
    assert scale["driver_cores_needed"] == pytest.approx(14.08)
    assert scale["machines_one_driver_core_keeps_up_with"] == pytest.approx(7.1)
    assert scale["driver_link_mb_per_s_paths"] == pytest.approx(1.28)
    assert scale["driver_link_mb_per_s_bytes"] == pytest.approx(128.0)
    assert scale["milvus_rows_per_s"] == 25600 and scale["milvus_lookups_per_s"] == 2560
    assert scale["milvus_server_cores_needed"] == pytest.approx(25.6)


def test_a_placeholder_names_a_field_of_the_report() -> None:
    report = {"runs": {"ray x2": {"rows": 4296}}, "wait_probe": [{"cpu_ms": 0.1}, {"cpu_ms": 1.1}]}
    assert bench_ray.field(report, 'runs."ray x2".rows') == 4296
    assert bench_ray.field(report, "wait_probe[1].cpu_ms") == 1.1
    text = "w = <measured: costs.worker_cpu_s_per_doc> s, <measured: a verdict>"
    found = [m.group(1) for m in bench_ray.PLACEHOLDER.finditer(text)]
    assert found == ["costs.worker_cpu_s_per_doc", "a verdict"]
