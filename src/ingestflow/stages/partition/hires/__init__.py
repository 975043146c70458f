"""High Res offline: the library's own hi_res pipeline on a bundled layout model, local OCR and
ingestflow's table structure.

`unstructured.partition.auto.partition(strategy="hi_res")` does the work — render pages, detect
regions (`layout_model`), merge them with the PDF's text layer (pdfminer), OCR what has no text
(tesseract, or PP-OCRv6 where module `ocr` chooses it), type the elements and order them
(columns read one after the other) — with hooks (`hooks`), active only while a hi_res call runs
in this process; the library's functions are replaced through `patches.unstructured`:

- the library's text-layer probe (a full pdfminer pass whose only use under hi_res is "is there a
  text layer?") is answered from pypdfium2's character count, which costs a few milliseconds;
- OCR is chosen per page: a page with a text layer OCRs only the regions that have no text (a
  figure, a scanned insert); a page without one (a scan, a photo) is OCRed whole;
- table structure comes from ingestflow's own builders (`table_model`: SLANet-1M by default, or
  `tables.table_html` from word gaps and ruling lines) with words from the text layer or from OCR
  of the table's crop (`table_cells`), instead of the library's Table Transformer, which
  downloads from a model hub;
- link annotations are read on every page: the library keeps `metadata.links` only when the first
  page of the call has a link, which drops every link of a document (or page range) whose first
  page has none;
- scanned pages are turned upright (90/180/270 degrees, and a few degrees of skew) before
  layout and OCR, and their elements' coordinates mapped back (`orientation`);
- pages are rendered once: the library renders every page to a PNG file up to four times (layout,
  OCR, and once per type of `extract_image_block_types`), and PNG encoding was a third of the
  time of a text PDF; later renderings of the same pages are hard links to the first;
- and they are kept uncompressed (`page_files`): each page is saved as a PNM file with its
  rotation notes kept beside it, so that neither the one encoding nor any of the page's
  decodings (layout, OCR, every crop) costs PNG's compression;
- a page shown turned by `/Rotate` whose text is upright as stored has its text layer read by
  pdfminer as stored (`rotated_text`: in the shown frame it lost the spaces between words);
- each page of a multi-page image file has its crops cut from its own frame (`frames`).

Modules: `environment` (what the machine needs, loading the models), `call` (one call's state),
`hooks`, `page_files`, `table_cells`, `text_layer` (pypdfium2's character counts),
`list_items` (bulleted text split into ListItems), `repeats` (a region found twice, or inside
another with its text: one element), `running_heads` (headers, footers and page numbers typed),
`prose` (running text taken for a table, read as paragraphs), `reading_order` (columns read
whole), `clean_text` (ligatures, accents, line-end hyphens, unmapped glyphs) with `glyphs` (what
pdfium reads of a glyph the text layer does not map), `blank_pages` (the note on pages that gave
nothing), `ink` (a page's inked area).
"""

from ingestflow.stages.partition.hires.call import DPI, Call, mark_ocr
from ingestflow.stages.partition.hires.environment import (
    INSTALLED_BY_SETUP,
    check_environment,
    debian_package,
    load_layout_model,
    load_ocr,
    load_table_model,
    tesseract_codes,
    tesseract_languages,
)
from ingestflow.stages.partition.hires.hooks import hooks
from ingestflow.stages.partition.hires.list_items import BULLETS, split_list_items
from ingestflow.stages.partition.hires.repeats import drop_contained, drop_repeats
from ingestflow.stages.partition.hires.running_heads import type_running_heads
from ingestflow.stages.partition.hires.text_layer import page_text_chars, text_layer_chars

__all__ = [
    "BULLETS",
    "DPI",
    "INSTALLED_BY_SETUP",
    "Call",
    "check_environment",
    "debian_package",
    "drop_contained",
    "drop_repeats",
    "hooks",
    "load_layout_model",
    "load_ocr",
    "load_table_model",
    "mark_ocr",
    "page_text_chars",
    "split_list_items",
    "tesseract_codes",
    "tesseract_languages",
    "text_layer_chars",
    "type_running_heads",
]
