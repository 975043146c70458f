#!/usr/bin/env bash
# The venv OmniDocBench's official scorer runs in (benchmarks/bench_pages.py): its imports only,
# apart from the project's venv (its requirements.txt pins far more, and clashes).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .scorer-venv
.scorer-venv/bin/pip install -q PyYAML Levenshtein apted pylatexenc==3.0a30 func_timeout loguru \
  'pandas<3' scipy matplotlib tabulate evaluate mmeval lxml beautifulsoup4 tqdm
