"""``import_trace``: any supported source -> the canonical trace table.

Formats (``--format``): ``csv``, ``jsonl``, ``parquet`` (:mod:`.formats_tabular`),
``har`` (:mod:`.formats_har`), ``rpc-log`` and ``size-log`` (:mod:`.formats_rawlog`),
or ``auto``: by extension (``.csv``; ``.jsonl``/``.ndjson``; ``.parquet``/``.pq``;
``.har``/``.json``; ``.log``/``.txt`` -> ``rpc-log`` or ``size-log`` from the first
request line's body), else by content for Parquet (``PAR1`` magic).

An import that keeps no row is an error naming the file, with every reason by count
(hosts not mapped, not requests, invalid rows), unless ``allow_empty``. The import is
all-or-nothing. Rows are validated and redacted chunk by chunk (memory is
bounded by ``chunk_rows``; HAR entries are streamed one at a time) and written to a temp
file in the destination folder. With ``on_invalid="error"`` the first invalid row stops
the import with a :class:`~sim.core.errors.CapsimError` naming file, location and field; with
``"skip"`` invalid rows are counted by reason. Each chunk's columns are checked for keys
as it goes to the writer (:func:`~sim.traces.redaction.check_chunk`); when all rows are
in, the temp file's metadata and raw bytes, and the text of chunks checked before the
last key was registered, are scanned for every raw key seen
(:func:`~sim.traces.redaction.finish_scan`: together, what
:func:`~sim.traces.redaction.scan_trace` checks); a survivor (possible only when a text
field held a key before the key was first seen in a key source) triggers one more pass
with every key known from the start, and a survivor of that pass fails the import. Only
then is the temp file moved onto ``out``; on any failure it is deleted.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..core.errors import CapsimError
from .canonical import finalize
from .formats_har import read_har
from .formats_rawlog import read_log, sniff_log_kind
from .formats_tabular import ColumnNotes, read_csv, read_jsonl, read_parquet
from .hosts import HostMap
from .names import FORMATS
from .problems import ON_INVALID, Problems
from .redaction import KeyRegistry, KeySurvived, check_chunk, finish_scan, is_opaque_token
from .schema import DEFAULT_CHUNK_ROWS, TraceWriter
from .tabular import normalize

_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet",
               ".pq": "parquet", ".har": "har", ".json": "har"}
_REGION_RE = re.compile(r"[^\x00-\x1f\x7f]{1,100}")
_LONG_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-]{20,}")


def _safe_column_name(name: str, registry: KeyRegistry) -> str:
    """A source column name fit for the report: keys and key-like tokens hidden."""
    return _LONG_TOKEN_RE.sub("<redacted>", registry.redact(name))[:60]


@dataclass(frozen=True)
class ImportReport:
    """What an import did. Holds counts and locations, never a key or a field value."""

    source: str
    out: str
    format: str
    rows: int
    row_groups: int
    distinct_keys: int
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    skipped_examples: tuple[str, ...] = ()
    ignored: dict[str, int] = field(default_factory=dict)
    ignored_columns: tuple[str, ...] = ()
    deviations: dict[str, int] = field(default_factory=dict)
    unmapped_hosts: dict[str, int] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        """Invalid rows skipped (``--on-invalid skip``)."""
        return sum(self.skipped_by_reason.values())

    def render(self) -> str:
        """A few human-readable lines."""
        lines = [f"imported {self.rows:,} rows ({self.format}) from {self.source} -> "
                 f"{self.out} ({self.row_groups} row group{'s' * (self.row_groups != 1)})",
                 f"keys: {self.distinct_keys} distinct API key(s) replaced by pseudonyms"]
        if self.skipped:
            reasons = ", ".join(f"{r} {n:,}" for r, n in sorted(self.skipped_by_reason.items()))
            lines.append(f"skipped {self.skipped:,} invalid rows: {reasons}")
            lines += [f"  {e}" for e in self.skipped_examples]
        if self.deviations:
            lines.append("JSON-RPC deviations from the spec's envelope (kept): " + ", ".join(
                f"{what} {n:,}" for what, n in sorted(self.deviations.items())))
        if self.ignored:
            lines.append("ignored (not requests): " + ", ".join(
                f"{what} {n:,}" for what, n in sorted(self.ignored.items())))
        if self.unmapped_hosts:
            lines.append(f"hosts not recognised or mapped: {_top_hosts(self.unmapped_hosts)}; "
                         "map them with --host-map HOST=rpc|search|streams|ignore")
        if self.ignored_columns:
            lines.append("ignored source columns: " + ", ".join(self.ignored_columns))
        return "\n".join(lines)


def _safe_hosts(problems: Problems, registry: KeyRegistry) -> dict[str, int]:
    """Unmapped host names fit for the report: keys and opaque labels hidden."""
    out: Counter = Counter()
    for host, n in problems.unmapped_hosts.items():
        labels = registry.redact(host).split(".")
        out[".".join("<redacted>" if is_opaque_token(x) else x for x in labels)] += n
    return dict(out)


def _top_hosts(hosts: dict[str, int], top: int = 5) -> str:
    ranked = sorted(hosts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{h} {n:,}" for h, n in ranked[:top])
    return text + (f" and {len(ranked) - top} more" if len(ranked) > top else "")


def _nothing_kept(path: str, fmt: str, problems: Problems, hosts: dict[str, int]) -> str:
    """Why an import kept no row: every counted reason, largest first."""
    unit = {"har": "entries", "parquet": "rows", "csv": "lines", "jsonl": "lines"}.get(
        fmt, "lines")
    reasons = Counter(problems.ignored)
    for reason, n in problems.counts.items():
        reasons[f"invalid ({reason})"] += n
    total = sum(reasons.values())
    if not total:
        return "nothing to import: the file holds no rows; pass --allow-empty to write " \
               "an empty trace"
    parts = []
    for what, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        if what.endswith("hosts not recognised or mapped") and hosts:
            what += f" (top: {_top_hosts(hosts, 3)})"
        parts.append(f"{n:,} {what}")
    return (f"nothing to import: {total:,} {unit}: " + ", ".join(parts)
            + "; pass --allow-empty to write an empty trace anyway")


def detect_format(path: str) -> str:
    """The format of ``path`` for ``--format auto`` (rules in the module doc)."""
    ext = Path(path).suffix.lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    if ext in (".log", ".txt"):
        kind = sniff_log_kind(path)
        if kind:
            return kind
        raise CapsimError("cannot tell rpc-log from size-log; pass --format", file=path,
                          field="--format")
    with open(path, "rb") as fh:
        if fh.read(4) == b"PAR1":
            return "parquet"
    raise CapsimError("cannot tell the format from the file name; pass --format", file=path,
                      field="--format")


def _chunks(fmt: str, path: str, problems: Problems, chunk_rows: int,
            registry: KeyRegistry, region: str | None, notes: ColumnNotes,
            host_map: HostMap) -> Iterator[pa.Table]:
    file = path
    if fmt in ("csv", "jsonl", "parquet"):
        reader = {"csv": read_csv, "jsonl": read_jsonl, "parquet": read_parquet}[fmt]
        for chunk in reader(path, file, problems, chunk_rows, notes):
            cols = normalize(chunk.raw, chunk.labels, chunk.lines, problems,
                             blank_rows_ignored=chunk.blank_rows_ignored)
            problems.settle()
            if cols is not None:
                yield finalize(cols, registry, region)
    else:
        if fmt == "har":
            source = read_har(path, file, problems, chunk_rows, registry, host_map)
        else:
            source = read_log(path, fmt, problems, chunk_rows)
        for cols in source:
            problems.settle()
            yield finalize(cols, registry, region)
    problems.settle()


def import_trace(path: str | os.PathLike, out: str | os.PathLike, *, fmt: str = "auto",
                 on_invalid: str = "error", region: str | None = None,
                 chunk_rows: int = DEFAULT_CHUNK_ROWS, host_map: Iterable[str] = (),
                 allow_empty: bool = False) -> ImportReport:
    """Import ``path`` into the canonical trace ``out`` (see the module doc).

    ``host_map``: ``HOST=rpc|search|streams|ignore`` strings (:mod:`.hosts`, HAR only).
    ``allow_empty``: write a 0-row trace instead of failing when nothing is kept.
    """
    hosts = HostMap.parse(host_map)
    path, out = str(path), str(out)
    if not os.path.isfile(path):
        raise CapsimError("no such file", file=path)
    if fmt not in (*FORMATS, "auto"):
        raise CapsimError(f"expected one of auto, {', '.join(FORMATS)}", field="--format")
    if on_invalid not in ON_INVALID:
        raise CapsimError(f"expected one of {', '.join(ON_INVALID)}", field="--on-invalid")
    if region is not None and not _REGION_RE.fullmatch(region.strip()):
        raise CapsimError("expected a region name (printable, at most 100 characters)",
                          field="--region")
    region = region.strip() if region is not None else None
    if os.path.exists(out) and os.path.samefile(path, out):
        raise CapsimError("the output would overwrite the source", file=out, field="--out")
    try:
        fmt = detect_format(path) if fmt == "auto" else fmt
        return _import(path, out, fmt, on_invalid, region, chunk_rows, hosts, allow_empty)
    except OSError as err:  # the output's failures are the output's (TraceWriter)
        raise CapsimError(f"cannot read it: {err.strerror or 'I/O error'}",
                          file=path) from None


def _import(path: str, out: str, fmt: str, on_invalid: str, region: str | None,
            chunk_rows: int, host_map: HostMap, allow_empty: bool) -> ImportReport:
    seed: frozenset[str] = frozenset()
    for attempt in (1, 2):
        registry = KeyRegistry(seed)
        problems = Problems(path, on_invalid)
        notes = ColumnNotes()
        with TraceWriter(out, chunk_rows) as writer:
            try:
                # each chunk is written in a thread while the next is read and checked
                # (Parquet encoding lets go of the GIL); one write at a time, in order
                checked: list[tuple[int, int]] = []  # (rows, registry generation)
                with ThreadPoolExecutor(1) as pool:
                    pending = None
                    for table in _chunks(fmt, path, problems, chunk_rows, registry, region,
                                         notes, host_map):
                        check_chunk(table, registry, label=out)
                        checked.append((table.num_rows, registry.generation))
                        if pending is not None:
                            pending.result()
                        pending = pool.submit(writer.write, table)
                    if pending is not None:
                        pending.result()
                if writer.rows + writer.buffered == 0 and not allow_empty:
                    raise CapsimError(_nothing_kept(path, fmt, problems,
                                                    _safe_hosts(problems, registry)), file=path)
                writer.close(registry.redact(os.path.basename(path)))
                # text written before the registry last grew is checked again
                stale = sum(rows for rows, gen in checked if gen != registry.generation)
                finish_scan(str(writer.tmp), registry, label=out, text_rows=stale)
            except KeySurvived:
                writer.discard()
                if attempt == 1 and registry.keys:
                    seed = registry.keys
                    continue
                raise
            writer.commit()
        examples = tuple(p.render(path) for reason in sorted(problems.examples)
                         for p in problems.examples[reason])
        return ImportReport(
            source=path, out=out, format=fmt, rows=writer.rows,
            row_groups=math.ceil(writer.rows / chunk_rows), distinct_keys=len(registry),
            skipped_by_reason=dict(problems.counts), skipped_examples=examples,
            ignored=dict(problems.ignored), deviations=dict(problems.deviations),
            unmapped_hosts=_safe_hosts(problems, registry),
            ignored_columns=tuple(_safe_column_name(c, registry) for c in notes.ignored))
    raise AssertionError("unreachable")  # pragma: no cover
