"""The text layer of PDF pages shown turned (`/Rotate`), read by pdfminer in the page's own
frame.

pdfminer lays a page's text out in the frame the page is shown in. On a page with `/Rotate 180`
(and 270, and 90 without vertical detection) its lines then run backwards and it drops the
spaces between words (`ModuleOne-IntroductiontoProduct`): High Res kept ~10 % of such a page's
words (benchmarks/RESULTS.md, "/Rotate pages"). The library already turns such a page's image
back by its /Rotate (`rotation_corrections`, from the characters' direction): where that turn
undoes the /Rotate exactly, the page's text is upright as stored, and here the library's pdfminer
pass reads a copy of the PDF with that page's `/Rotate` taken off and no turn of its boxes, which
land where the library's own pass put them. A page whose content is drawn turned so that its
/Rotate shows it upright (a landscape table) is read as before, in the frame it is shown in.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def process_file_with_pdfminer_upright(original: Callable[..., Any]) -> Callable[..., Any]:
    """The library's `process_file_with_pdfminer`, run on a copy of the PDF without the
    `/Rotate` of the pages whose text is upright as stored (as it was when there is none, or
    when no copy can be made)."""

    def process_file_with_pdfminer(
        filename: str = "",
        dpi: int = 350,  # the library's default; High Res passes its own
        password: str | None = None,
        pdfminer_config: Any = None,
        rotation_corrections: list[int] | None = None,
    ) -> Any:
        def call(name: str, corrections: list[int] | None) -> Any:
            return original(
                filename=name,
                dpi=dpi,
                password=password,
                pdfminer_config=pdfminer_config,
                rotation_corrections=corrections,
            )

        rotations = page_rotations(filename, password)
        corrections = list(rotation_corrections or [])
        corrections += [0] * (len(rotations) - len(corrections))
        # a page whose text the library turns back by exactly its /Rotate (counter-clockwise
        # by the rest of 360) has its text upright as stored: read there, and left unturned
        upright = {
            index
            for index, (rotation, turn) in enumerate(zip(rotations, corrections, strict=False))
            if rotation and (turn + 360 - rotation) % 360 == 0
        }
        if not upright:
            return call(filename, rotation_corrections)
        with tempfile.TemporaryDirectory(prefix="ingestflow-unrotated-") as folder:
            copy = Path(folder) / "unrotated.pdf"
            if not _unrotated_copy(Path(filename), copy, password, upright):
                return call(filename, rotation_corrections)
            return call(str(copy), [0 if i in upright else c for i, c in enumerate(corrections)])

    return process_file_with_pdfminer


def page_rotations(path: str | Path, password: str | None = None) -> list[int]:
    """Each page's `/Rotate` (inherited ones too), clockwise degrees 0-270; [] when pdfium
    cannot open the file."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path), password=password)
    except pdfium.PdfiumError:
        return []
    try:
        rotations = []
        for page in pdf:
            rotations.append(page.get_rotation() % 360)
            page.close()
        return rotations
    finally:
        pdf.close()


def _unrotated_copy(source: Path, target: Path, password: str | None, pages: set[int]) -> bool:
    """Write `source` with `/Rotate 0` on `pages` (indexes) to `target`; False when it cannot."""
    import pikepdf

    try:
        with pikepdf.open(source, password=password or "") as pdf:
            for index in pages:
                pdf.pages[index].obj.Rotate = 0  # on the page: an inherited /Rotate is overridden
            pdf.save(target)
    except Exception:  # the library's own pass reads it (and says what is wrong)
        return False
    return True
