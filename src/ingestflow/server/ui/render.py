"""The UI's HTML: Jinja templates shipped with the package, autoescaped (element text is
untrusted), and a whitelist sanitiser for the one piece of markup shown as markup,
`text_as_html` tables."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from markupsafe import Markup
from starlette.responses import HTMLResponse

# the headers of every UI page: nothing from elsewhere, no inline script, no framing
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
TABLE_TAGS = {"table", "thead", "tbody", "tfoot", "tr", "td", "th", "caption", "colgroup", "col",
              "br", "p", "span", "b", "i", "em", "strong", "sub", "sup"}  # fmt: skip
CROP_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
TABLE_ATTRIBUTES = {"td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan"}}
# the element types with a colour of their own (static/ui.css); others are drawn grey
TYPES = ("Title", "NarrativeText", "ListItem", "Table", "TableChunk", "Image", "FigureCaption",
         "Header", "Footer", "Formula", "PageBreak", "CompositeElement",
         "UncategorizedText", "Address", "EmailAddress", "CodeSnippet", "PageNumber")  # fmt: skip


@cache
def _environment() -> Any:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("ingestflow.server.ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["table_html"] = table_html
    env.filters["type_class"] = type_class
    env.filters["pretty"] = lambda value: json.dumps(value, indent=1, ensure_ascii=False)
    env.filters["seconds"] = seconds
    env.filters["crop_url"] = crop_url
    return env


def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A template rendered as an HTML answer with the UI's security headers."""
    text = _environment().get_template(name).render(**context)
    return HTMLResponse(text, status_code=status, headers=SECURITY_HEADERS)


def table_html(markup: Any) -> Markup:
    """`text_as_html` with only table tags and their spans kept (no script, no attribute that
    could run or load anything)."""
    import nh3

    cleaned = nh3.clean(
        str(markup or ""), tags=TABLE_TAGS, attributes=TABLE_ATTRIBUTES, url_schemes=set()
    )
    return Markup(cleaned)  # whitelisted by nh3 just above


def crop_url(element: Any) -> str:
    """An element's `image_base64` crop as a data: URL, or "" when it has none, its media type
    is not a plain image, or the data is not base64."""
    meta = element.get("metadata") if isinstance(element, dict) else None
    data = (meta or {}).get("image_base64")
    kind = (meta or {}).get("image_mime_type") or "image/jpeg"
    if not isinstance(data, str) or kind not in CROP_TYPES or not _BASE64.fullmatch(data):
        return ""
    return f"data:{kind};base64,{data}"


def type_class(kind: Any) -> str:
    """The CSS class of an element type (`t-Other` for types without a colour)."""
    return f"t-{kind}" if kind in TYPES else "t-Other"


def seconds(runtime: Any) -> str:
    """An ISO duration (`PT12.345S`) as `12.345 s`."""
    text = str(runtime or "")
    return text[2:-1] + " s" if text.startswith("PT") and text.endswith("S") else text
