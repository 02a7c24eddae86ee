"""``report.html``: one self-contained file (plots embedded), rendered from the Markdown."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:4px 8px}td{text-align:right}td:first-child{text-align:left}
th{background:#f3f3f3}img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
code{background:#f6f6f6;padding:0 3px}.fails{color:#b00}.meets{color:#070}
"""


def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\b(meets|fails)\b(?= *$)", r'<span class="\1">\1</span>', text)
    return text


def render(markdown: str, folder: Path) -> str:
    """HTML for the report's Markdown; images in ``folder`` are embedded as data URIs."""
    out, table, in_list = [], [], False

    def flush_table():
        if not table:
            return
        rows = [r for r in table if not re.fullmatch(r"\|[-:| ]+\|", r)]
        cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
        out.append("<table>")
        out.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in cells[0]) + "</tr>")
        for row in cells[1:]:
            tds = "".join(f'<td class="{ _cls(c)}">{_inline(c)}</td>' for c in row)
            out.append("<tr>" + tds + "</tr>")
        out.append("</table>")
        table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush_table()
        if in_list and not line.startswith("- "):
            out.append("</ul>")
            in_list = False
        if m := re.match(r"^(#{1,3}) (.*)$", line):
            level = len(m.group(1))
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
        elif m := re.match(r"^!\[(.*?)\]\((.*?)\)$", line):
            data = base64.b64encode((folder / m.group(2)).read_bytes()).decode("ascii")
            out.append(f'<img alt="{html.escape(m.group(1))}" src="data:image/png;base64,{data}">')
        elif line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush_table()
    if in_list:
        out.append("</ul>")
    title = re.search(r"^# (.*)$", markdown, re.M)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title.group(1) if title else 'capsim report')}</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n")


def _cls(cell: str) -> str:
    return cell if cell in ("meets", "fails") else ""
