"""CPU seconds per table of the table-structure model (SLANet-1M, `tables/model.py`).

    .venv/bin/python benchmarks/bench_table_model.py

Runs the model (one onnxruntime thread, as in a worker) on the rendered table crops of
`benchmarks/fidelity/out/images` (`benchmarks/fidelity/make_tables.py` makes them) and prints the
process CPU time per table (robust to other load on a shared machine) and the wall time.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
IMAGES = REPO / "benchmarks" / "fidelity" / "out" / "images"


def main() -> None:
    import cv2

    from ingestflow.stages.partition.hires.tables import model as table_model

    paths = sorted(IMAGES.glob("*.png"))
    if not paths:
        sys.exit(f"no table images in {IMAGES}; run benchmarks/fidelity/make_tables.py first")
    model = table_model.get_model()
    rows = []
    for path in paths:
        image = cv2.imread(str(path))
        cpu, wall = time.process_time(), time.perf_counter()
        structure = model.structure(image)
        rows.append((time.process_time() - cpu, time.perf_counter() - wall, path.stem, structure))
    cpu_s = [r[0] for r in rows]
    wall_s = [r[1] for r in rows]
    slowest = max(rows, key=lambda r: r[0])
    print(
        f"{len(rows)} tables: CPU s/table median {statistics.median(cpu_s):.3f}, "
        f"mean {statistics.mean(cpu_s):.3f}, max {max(cpu_s):.3f} ({slowest[2]}, "
        f"{len(slowest[3].cells)} cells); wall s/table median {statistics.median(wall_s):.3f}"
    )


if __name__ == "__main__":
    main()
