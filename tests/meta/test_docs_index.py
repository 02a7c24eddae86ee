"""The documentation holds together: every page of docs/ is listed in its index, every
relative link (and #anchor) in the README and docs/ leads somewhere, the README stays the
front door (at most 300 lines), and nothing points outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if not fenced and (m := re.match(r"#{1,6} (.+)", line)):
            found.add(slug(m.group(1)))
    return found


def test_slug_matches_githubs_anchors():
    assert slug("Replay options (`[sources.replay]`)") == "replay-options-sourcesreplay"
    assert slug("On the wire: the live emulator") == "on-the-wire-the-live-emulator"
    assert slug("Set-up: two commands") == "set-up-two-commands"


def test_every_page_is_in_the_index():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    listed = {(DOCS / target).resolve() for target in LINK.findall(index)}
    missing = [str(p.relative_to(ROOT)) for p in pages()
               if p.name != "README.md" and p.resolve() not in listed]
    assert not missing, f"pages not listed in docs/README.md: {missing}"


def test_every_relative_link_resolves():
    broken = []
    for page in [ROOT / "README.md", *pages()]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_is_the_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move detail into docs/"


def test_nothing_points_outside_the_repository():
    outside = ["../" + "shared", "/work/" + "shared", "/work/" + "wt"]
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    hits = []
    for name in files:
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".toml", ".txt", ".json", ".yml", ".yaml", ""}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        hits += [f"{name}: {word}" for word in outside if word in text]
    assert not hits, f"pointers outside the repository: {hits}"
