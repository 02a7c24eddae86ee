"""CSV, JSONL and Parquet sources: read in bounded chunks, hand raw columns to
:func:`sim.traces.tabular.normalize`.

* **CSV**: UTF-8, comma-separated, a header line naming the columns, LF or CRLF line
  ends, one row per line (a quoted value must not contain a newline: such a row is
  reported as invalid). The file is cut into blocks at line ends, each block parsed by
  Arrow with every column read as bytes; a block whose shape is off (a wrong field
  count, bad quoting, a quoted newline) is re-read line by line with the ``csv`` module
  so that each problem gets its exact line number. Locations are physical line numbers
  (the header is line 1).
* **JSONL**: one JSON object per line, keys named like CSV columns; each value must
  have the JSON type of its canonical column: numbers for ``time_ns``, ``items``,
  ``gas_used``, ``cu``, ``status``, ``latency_ms``; strings for ``api``, ``method``,
  ``key``, ``region``, ``profiles``, ``body_hash``; either for ``timestamp`` / ``time``
  (ISO-8601 text or epoch seconds). Anything else makes the row invalid. Blank lines are
  ignored.
* **Parquet**: read with ``iter_batches``; each column's type must carry the canonical
  column's type (integers, or floats with integral values, for integer columns;
  integers or timestamps for ``time_ns``; numbers for ``cu`` / ``latency_ms``; strings,
  binary or dictionaries of them for text), else the import stops naming the column.
  Locations are 1-based row numbers.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..core.errors import CapsimError
from .problems import Problems
from .tabular import ALIASES, ROLE_OF, resolve_columns

MIN_BLOCK = 1 << 16
MAX_BLOCK = 64 << 20
ARROW_BLOCK = 4 << 20  # Arrow parses a block's 4-MiB pieces in parallel
READ_ROWS = 1 << 17  # rows validated at a time; the writer regroups them into chunk_rows
_BAD = "\x00"  # stands for a JSON value of the wrong type: fails every field's check


@dataclass
class RawChunk:
    """Raw columns by role, their source labels, and each row's location."""

    raw: dict[str, pa.Array]
    labels: dict[str, str]
    lines: np.ndarray
    blank_rows_ignored: bool = False  # CSV: a row of empty fields is a blank line


@dataclass
class ColumnNotes:
    """What the reader learned about the source's columns (for the import report)."""

    ignored: list[str] = field(default_factory=list)


# -- CSV ---------------------------------------------------------------------------------

def _header(fh, file: str) -> list[str]:
    first = fh.readline()
    if not first.strip():
        raise CapsimError("expected a header line naming the columns", file=file, line=1)
    try:
        text = first.decode("utf-8-sig").rstrip("\r\n")
        return next(csv.reader([text], strict=True))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        raise CapsimError("expected a CSV header line in UTF-8", file=file, line=1) from None


def _block_size(sample: bytes, chunk_rows: int) -> int:
    lines = max(sample.count(b"\n"), 1)
    per_line = max(len(sample) // lines, 16)
    return int(min(max(per_line * chunk_rows, MIN_BLOCK), MAX_BLOCK))


def _fast_parse(block, names: list[str], wanted: list[str]) -> pa.Table | None:
    """Arrow parse of a block, or None when the block needs the line-by-line path.

    No ``invalid_row_handler``: Arrow decodes the offending row to ``str`` before calling
    it, so a row with a wrong field count and a non-UTF-8 byte printed an "Exception
    ignored" traceback. A malformed row makes Arrow raise instead, and the line-by-line
    path reports it.
    """
    try:
        return pacsv.read_csv(
            pa.py_buffer(block),
            read_options=pacsv.ReadOptions(column_names=names, block_size=ARROW_BLOCK),
            parse_options=pacsv.ParseOptions(ignore_empty_lines=False),
            convert_options=pacsv.ConvertOptions(
                column_types={n: pa.binary() for n in names}, include_columns=wanted,
                strings_can_be_null=False, quoted_strings_can_be_null=False))
    except (pa.ArrowException, ValueError):
        return None


def _slow_parse(block: bytes, names: list[str], wanted: list[str], first_line: int,
                problems: Problems) -> tuple[dict[str, list], list[int]]:
    cols: dict[str, list] = {n: [] for n in wanted}
    lines: list[int] = []
    index = {n: names.index(n) for n in wanted}
    raw_lines = block.split(b"\n")
    if block.endswith(b"\n"):
        raw_lines.pop()
    for offset, raw in enumerate(raw_lines):
        line = first_line + offset
        raw = raw.rstrip(b"\r")
        if not raw.strip():
            problems.ignore("blank lines")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.add("encoding", line, "line", "expected UTF-8 text")
            continue
        try:
            fields = next(csv.reader([text], strict=True))
        except (csv.Error, StopIteration):
            problems.add("csv", line, "line",
                         "malformed CSV (bad quoting, or a newline inside a value)")
            continue
        if len(fields) != len(names):
            problems.add("columns", line, "line",
                         f"expected {len(names)} fields, got {len(fields)}")
            continue
        for n in wanted:
            cols[n].append(fields[index[n]])
        lines.append(line)
    return cols, lines


def read_csv(path: str, file: str, problems: Problems, chunk_rows: int,
             notes: ColumnNotes) -> Iterator[RawChunk]:
    """Chunks of a CSV source (see module doc)."""
    with open(path, "rb") as fh:
        names = _header(fh, file)
        mapping, notes.ignored = resolve_columns(names, file, 1)
        if len(set(names)) != len(names):
            raise CapsimError("column appears twice", file=file, line=1, field="columns")
        wanted = list(mapping.values())
        role_of = {src: role for role, src in mapping.items()}
        labels = {role: src for role, src in mapping.items()}
        sample = fh.read(MIN_BLOCK)
        block_size = _block_size(sample, min(chunk_rows, READ_ROWS))
        carry, line_no, eof = sample, 2, False
        while not eof or carry:
            parts = [carry]
            size = len(carry)
            while not eof and (size < block_size or b"\n" not in parts[-1]):
                more = fh.read(block_size)
                eof = not more
                parts.append(more)
                size += len(more)
            data = b"".join(parts) if len(parts) > 1 else parts[0]
            del parts
            cut = data.rfind(b"\n") + 1 if not eof else len(data)
            if cut == 0:
                cut = len(data)
            view = memoryview(data)
            block, carry = view[:cut], bytes(view[cut:])
            if not len(block):
                break
            n_lines = data.count(b"\n", 0, cut) + (0 if data[cut - 1:cut] == b"\n" else 1)
            table = _fast_parse(block, names, wanted)
            if table is not None and table.num_rows == n_lines:
                raw = {role_of[c]: table.column(c).combine_chunks() for c in wanted}
                del table
                lines = np.arange(line_no, line_no + n_lines, dtype=np.int64)
            else:
                cols, line_list = _slow_parse(bytes(block), names, wanted, line_no, problems)
                raw = {role_of[c]: pa.array(v, pa.string()) for c, v in cols.items()}
                lines = np.asarray(line_list, dtype=np.int64)
            line_no += n_lines
            del block, view, data
            yield RawChunk(raw, labels, lines, blank_rows_ignored=True)


# -- JSONL -------------------------------------------------------------------------------

NUMERIC_ROLES = frozenset({"time_ns", "items", "gas_used", "cu", "status", "latency_ms",
                           "retry_after_s"})
TEXT_ROLES = frozenset({"api", "method", "key", "region", "profiles", "body_hash"})


def _as_text(value, role: str) -> str | None:
    """A JSON value as the text the validator parses; a value of the wrong JSON type for
    the role's canonical column (a string ``time_ns``, a number ``key``) fails."""
    if value is None:
        return None
    if isinstance(value, str):
        return _BAD if role in NUMERIC_ROLES else value
    if role in TEXT_ROLES:
        return _BAD
    if isinstance(value, bool):
        return _BAD
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else _BAD
    return _BAD


def read_jsonl(path: str, file: str, problems: Problems, chunk_rows: int,
               notes: ColumnNotes) -> Iterator[RawChunk]:
    """Chunks of a JSON-lines source (see module doc)."""
    roles = list(ALIASES)
    labels = {role: names[0] for role, names in ALIASES.items()}
    ignored: dict[str, None] = {}

    def fresh() -> dict[str, list]:
        return {role: [] for role in roles}

    cols, lines = fresh(), []
    with open(path, "rb") as fh:
        for line_no, raw in enumerate(fh, 1):
            if not raw.strip():
                problems.ignore("blank lines")
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):
                problems.add("json", line_no, "line", "expected a JSON object")
                continue
            if not isinstance(obj, dict):
                problems.add("json", line_no, "line", "expected a JSON object")
                continue
            found: dict[str, object] = {}
            for name, value in obj.items():
                role = ROLE_OF.get(name.strip().lower())
                if role is None:
                    if len(ignored) < 50:
                        ignored[name] = None
                    continue
                rank = ALIASES[role].index(name.strip().lower())
                prev = found.get(role)
                if prev is None or rank < prev[0]:
                    found[role] = (rank, value)
            if "time_ns" in found and "time_s" in found:
                del found["time_s"]
            for role in roles:
                cols[role].append(_as_text(found[role][1], role) if role in found else None)
            lines.append(line_no)
            if len(lines) >= min(chunk_rows, READ_ROWS):
                yield _jsonl_chunk(cols, labels, lines)
                cols, lines = fresh(), []
    notes.ignored = list(ignored)
    if lines:
        yield _jsonl_chunk(cols, labels, lines)


def _jsonl_chunk(cols: dict[str, list], labels: dict[str, str], lines: list[int]) -> RawChunk:
    raw = {role: pa.array(values, pa.string()) for role, values in cols.items()
           if any(v is not None for v in values) or role in ("api", "method")}
    if "time_ns" not in raw and "time_s" not in raw:
        raw["time_s"] = pa.nulls(len(lines), pa.string())
    return RawChunk(raw, labels, np.asarray(lines, dtype=np.int64))


# -- Parquet -----------------------------------------------------------------------------

_PARQUET_TYPES = {
    "time_ns": ("an integer or timestamp column", ("int", "timestamp")),
    "time_s": ("a timestamp, number or ISO-8601 string column",
               ("int", "float", "timestamp", "string")),
    "items": ("an integer column", ("int", "float")),
    "gas_used": ("an integer column", ("int", "float")),
    "status": ("an integer column", ("int", "float")),
    "cu": ("a numeric column", ("int", "float")),
    "latency_ms": ("a numeric column", ("int", "float")),
    "retry_after_s": ("a numeric column", ("int", "float")),
}


def _type_kind(typ: pa.DataType) -> str:
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if pa.types.is_integer(typ):
        return "int"
    if pa.types.is_floating(typ):
        return "float"
    if pa.types.is_timestamp(typ):
        return "timestamp"
    if pa.types.is_null(typ):
        return "null"
    if any(f(typ) for f in (pa.types.is_string, pa.types.is_large_string,
                            pa.types.is_binary, pa.types.is_large_binary)):
        return "string"
    return "other"


def _check_parquet_type(role: str, src: str, typ: pa.DataType, file: str) -> None:
    """The column's Arrow type must carry the canonical column's type (schema.py): numbers
    for numeric columns (a ``time_ns`` stored as strings is refused), text for text."""
    expected, kinds = _PARQUET_TYPES.get(role, ("a string column", ("string",)))
    kind = _type_kind(typ)
    if kind != "null" and kind not in kinds:
        raise CapsimError(f"column type {typ} does not fit; expected {expected}", file=file,
                          field=src)


def read_parquet(path: str, file: str, problems: Problems, chunk_rows: int,
                 notes: ColumnNotes) -> Iterator[RawChunk]:
    """Chunks of a Parquet source (see module doc)."""
    try:
        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
    except (OSError, pa.ArrowException):
        raise CapsimError("not a readable Parquet file", file=file) from None
    try:
        mapping, notes.ignored = resolve_columns(names, file, None)
        labels = {role: src for role, src in mapping.items()}
        for role, src in mapping.items():
            _check_parquet_type(role, src, pf.schema_arrow.field(src).type, file)
        row = 1
        batches = pf.iter_batches(batch_size=min(chunk_rows, READ_ROWS),
                                  columns=list(mapping.values()))
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except (OSError, pa.ArrowException):
                raise CapsimError("corrupt Parquet data", file=file, line=row) from None
            raw = {role: batch.column(src) for role, src in mapping.items()}
            lines = np.arange(row, row + batch.num_rows, dtype=np.int64)
            row += batch.num_rows
            yield RawChunk(raw, labels, lines)
    finally:
        pf.close()
