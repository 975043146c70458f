"""Deeply nested HTML: read in full, or refused, never cut short in silence.

The library's HTML partitioner parses with an lxml parser that stops at libxml2's depth limit
(256 levels): what lies deeper, and everything after it, was dropped without a word, and the
document succeeded. `install()` (once per process, before the first partition) gives the library
the same parser with lxml's own `huge_tree` option, which lifts that limit, and checks every HTML
text it partitions (HTML files, email bodies, a VLM's HTML) before the library walks it: nested
deeper than MAX_HTML_DEPTH levels, which the library's recursive walk cannot follow, the text is
refused with a DocumentError that says so, and the document fails alone.
"""

from __future__ import annotations

import functools
from typing import Any

from ingestflow.errors import DocumentError

#: The deepest nesting read: the library walks the tree one Python call per level, and fails
#: near the interpreter's recursion limit (1000); real pages are a few dozen levels deep.
MAX_HTML_DEPTH = 500


def install() -> None:
    """Give the library's HTML partitioner a parser without the depth limit, and the depth check
    before it walks a tree; idempotent."""
    from ingestflow.patches import unstructured as unstructured_patches

    unstructured_patches.installed("html_parser", _huge_parser)
    unstructured_patches.installed("html_partitioner_main", _checked_main)


def _huge_parser(library_parser: Any) -> Any:
    """The library's parser, with `huge_tree`, and its element classes."""
    from unstructured.partition.html import parser

    huge = _parser()
    huge.set_element_class_lookup(parser.element_class_lookup)
    return huge


def _checked_main(main: functools.cached_property) -> functools.cached_property:
    """`_HtmlPartitioner._main` that checks the depth of the HTML before walking it."""
    walk = main.func

    def checked_main(self: Any) -> Any:
        check_depth(self._opts.html_text)
        return walk(self)

    return functools.cached_property(checked_main)


def check_depth(html: str | bytes) -> None:
    """DocumentError when `html` nests deeper than MAX_HTML_DEPTH levels (or deeper than even a
    `huge_tree` parser reads), naming how deep and what to do."""
    from lxml import etree

    parser = _parser()  # its own: an lxml parser serves one thread at a time
    try:
        root = etree.fromstring(html, parser)
    except ValueError:  # a str with an encoding declaration: lxml wants bytes (as the library)
        root = etree.fromstring(html.encode("utf-8") if isinstance(html, str) else html, parser)
    except etree.XMLSyntaxError:
        return  # nothing parsed: the library says what is wrong, if anything
    if root is None:
        return
    limit = next((e.message for e in parser.error_log if "Excessive depth" in e.message), None)
    depth = _depth(root)
    if limit is not None or depth > MAX_HTML_DEPTH:
        found = f"more than {depth}" if limit is not None else str(depth)
        raise DocumentError(
            f"the HTML is nested {found} levels deep, deeper than the {MAX_HTML_DEPTH} levels "
            "the HTML partitioner reads (its text would be cut short); flatten the nesting "
            "(remove wrapping elements) and run it again"
        )


def _parser() -> Any:
    """The library's parser options, with `huge_tree` (no depth limit short of libxml2's own)."""
    from lxml import etree

    return etree.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)


def _depth(root: Any) -> int:
    """The deepest element's depth (the root is 1), without recursion."""
    from lxml import etree

    depth = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    return deepest
