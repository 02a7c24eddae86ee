"""``report.html``: one self-contained file, rendered from the report's Markdown by
markdown-it-py (CommonMark and GFM tables; raw HTML in the Markdown is escaped, never
passed through), with the interactive charts (:mod:`.interactive`, plotly.js embedded
once) in place of their PNGs and every other plot embedded as a PNG data URI. Nothing
is fetched when the page is opened: it works offline."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:4px 8px}td{text-align:right}td:first-child{text-align:left}
th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
code{background:#f6f6f6;padding:0 3px}.fails{color:#b00}.meets{color:#070}
.chart{border:1px solid #eee;margin:0.5em 0}
"""

_MD = MarkdownIt("commonmark", {"html": False}).enable("table")
_IMAGE = re.compile(r"^!\[[^\]]*\]\([^)]*\)$")


def _verdict_classes(tokens: list[Token]) -> None:
    """A table cell reading ``meets`` or ``fails...`` gets that class (coloured)."""
    for i, tok in enumerate(tokens[:-1]):
        if tok.type == "td_open" and tokens[i + 1].type == "inline":
            word = tokens[i + 1].content.split(":", 1)[0].strip()
            if word in ("meets", "fails"):
                tok.attrSet("class", word)


def _charts_and_images(tokens: list[Token], folder: Path, charts: dict[str, str]) -> list[Token]:
    """A paragraph that is one image: its chart (``charts``, keyed by the PNG's name) as
    an HTML block, else the PNG embedded as a data URI."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        inline = tokens[i + 1] if i + 2 < len(tokens) else None
        if (tok.type == "paragraph_open" and inline is not None and inline.type == "inline"
                and _IMAGE.match(inline.content.strip())
                and inline.children and inline.children[0].type == "image"):
            image = inline.children[0]
            src = str(image.attrGet("src") or "")
            if src in charts:
                block = Token("html_block", "", 0)
                block.content = charts[src] + "\n"
                out.append(block)
                i += 3
                continue
            data = base64.b64encode((folder / src).read_bytes()).decode("ascii")
            image.attrSet("src", f"data:image/png;base64,{data}")
        out.append(tok)
        i += 1
    return out


def render(markdown: str, folder: Path, charts: dict[str, str] | None = None,
           script: str | None = None) -> str:
    """HTML for the report's Markdown. Images in ``folder`` are embedded as data URIs,
    except those ``charts`` maps (PNG name -> the chart's HTML), drawn by ``script``
    (plotly.js, embedded once in the page's head)."""
    charts = charts or {}
    # One paragraph per image line, so that a chart can take a whole paragraph's place.
    markdown = "\n".join(f"\n{line}\n" if _IMAGE.match(line) else line
                         for line in markdown.splitlines())
    tokens = _MD.parse(markdown)
    _verdict_classes(tokens)
    tokens = _charts_and_images(tokens, folder, charts)
    body = _MD.renderer.render(tokens, _MD.options, {})
    title = re.search(r"^# (.*)$", markdown, re.M)
    js = f"<script>{script}</script>" if script and charts else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title.group(1) if title else 'capsim report')}</title>"
            f"<style>{_CSS}</style>{js}</head><body>\n" + body + "</body></html>\n")
