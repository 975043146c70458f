"""Take the README's screenshots of the web UI: two High Res jobs of a one-page PDF from the
corpus (chunks of 500, then 1500 characters), `ingestflow ui` started as a user starts it, and
Debian's chromium (headless, through Playwright) on the jobs, a page with its element boxes,
and the two jobs compared. Writes small palette PNGs to docs/img/.

    python scripts/ui_screenshots.py [--corpus ../shared/corpus] [--out docs/img]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXE = [sys.executable, "-c", "from ingestflow.cli import main; main()"]
PDF = "docs/pdf/embedded-images-tables.pdf"
CHROMIUM = "/usr/bin/chromium"


def workflow(folder: Path, max_characters: int) -> Path:
    """High Res with coordinates and table structure, then chunk by title."""
    body = {
        "name": "high res tables",
        "workflow_type": "custom",
        "workflow_nodes": [
            {
                "name": "Partitioner",
                "type": "partition",
                "subtype": "unstructured_api",
                "settings": {
                    "strategy": "hi_res",
                    "coordinates": True,
                    "pdf_infer_table_structure": True,
                },
            },
            {
                "name": "Chunker",
                "type": "chunk",
                "subtype": "chunk_by_title",
                "settings": {"max_characters": max_characters, "include_orig_elements": True},
            },
        ],
    }
    path = folder / f"workflow-{max_characters}.json"
    path.write_text(json.dumps(body))
    return path


def run(folder: Path, ws: Path, max_characters: int, *extra: str) -> str:
    """One traced job; its id."""
    done = subprocess.run(
        [*EXE, "run", str(workflow(folder, max_characters)), "-i", str(folder / "in"),
         "-o", str(folder / f"out-{max_characters}"), "--workspace", str(ws), "--trace",
         "--json", *extra],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)["id"]


def small_png(path: Path) -> None:
    """Shrink a screenshot to a 256-colour palette PNG."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(256).save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    args = parser.parse_args()
    if not (args.corpus / PDF).exists():
        sys.exit(f"no {PDF} under {args.corpus}: give the corpus with --corpus")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "in").mkdir()
        shutil.copy(args.corpus / PDF, folder / "in" / Path(PDF).name)
        ws = folder / "ws"
        first = run(folder, ws, 500)
        second = run(folder, ws, 1500, "--from-job", first)
        ui = subprocess.Popen(
            [*EXE, "ui", "--workspace", str(ws), "--port", "0", "--no-browser"],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            link = None
            deadline = time.monotonic() + 120
            while link is None and time.monotonic() < deadline and ui.stderr is not None:
                found = re.search(r"http://127\.0\.0\.1:\d+/ui/signin\?\S+", ui.stderr.readline())
                link = found.group(0) if found else None
            if link is None:
                sys.exit("`ingestflow ui` printed no sign-in link")
            base = link.split("/ui/")[0]
            shoot(link, base, first, second, args.out)
        finally:
            ui.send_signal(signal.SIGINT)
            ui.wait(timeout=60)


def shoot(link: str, base: str, first: str, second: str, out: Path) -> None:
    """The three screenshots."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 760})
        page.goto(link)
        page.set_viewport_size({"width": 1280, "height": 330})  # two jobs: a short page
        page.screenshot(path=out / "ui-jobs.png")
        page.set_viewport_size({"width": 1280, "height": 760})
        page.goto(f"{base}/ui/jobs/{first}")
        page.locator("#files a").first.click()
        page.wait_for_load_state("networkidle")
        page.locator("#elements article[data-type='Table']").first.scroll_into_view_if_needed()
        page.screenshot(path=out / "ui-page.png")
        page.goto(f"{base}/ui/diff?a={first}&b={second}")
        page.locator("section.diff-node").nth(1).scroll_into_view_if_needed()
        page.screenshot(path=out / "ui-diff.png")
        browser.close()
    for name in ("ui-jobs.png", "ui-page.png", "ui-diff.png"):
        small_png(out / name)
        print(f"wrote {out / name} ({(out / name).stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
