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
  ignored. Blocks of whole lines are parsed by Arrow's JSON reader and checked column by
  column; a block Arrow cannot read exactly as ``json.loads`` reads each line (see
  :func:`read_jsonl`) is read line by line, with the same result.
* **Parquet**: read with ``iter_batches``; each column's type must carry the canonical
  column's type (integers, or floats with integral values, for integer columns;
  integers or timestamps for ``time_ns``; numbers for ``cu`` / ``latency_ms``; strings,
  binary or dictionaries of them for text), else the import stops naming the column.
  Locations are 1-based row numbers.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
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


def _slow_parse(block, names: list[str], wanted: list[str], first_line: int,
                problems: Problems) -> tuple[dict[str, list], list[int]]:
    block = bytes(block)
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
        blocks = _csv_blocks(fh, sample, block_size)
        with ThreadPoolExecutor(1) as pool:  # Arrow parses the next block meanwhile
            def ahead():
                for block, line_no, n_lines in itertools.islice(blocks, 1):
                    return block, line_no, n_lines, pool.submit(_fast_parse, block, names,
                                                                wanted)
                return None

            nxt = ahead()
            while nxt is not None:
                block, line_no, n_lines, parsed = nxt
                nxt = ahead()
                table = parsed.result()
                if table is not None and table.num_rows == n_lines:
                    raw = {role_of[c]: table.column(c).combine_chunks() for c in wanted}
                    del table
                    lines = np.arange(line_no, line_no + n_lines, dtype=np.int64)
                else:
                    cols, line_list = _slow_parse(block, names, wanted, line_no, problems)
                    raw = {role_of[c]: pa.array(v, pa.string()) for c, v in cols.items()}
                    lines = np.asarray(line_list, dtype=np.int64)
                del block
                yield RawChunk(raw, labels, lines, blank_rows_ignored=True)


def _csv_blocks(fh, sample: bytes, block_size: int) -> Iterator[tuple[bytes, int, int]]:
    """``(whole lines, number of the first, how many)`` after the header, about
    ``block_size`` bytes at a time; the last line may lack its line end."""
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
        if not cut:
            break
        block, carry = memoryview(data)[:cut], data[cut:]  # the block is not copied
        n_lines = data.count(b"\n", 0, cut) + (0 if data[cut - 1:cut] == b"\n" else 1)
        del data
        yield block, line_no, n_lines
        line_no += n_lines


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


JSONL_BLOCK = 16 << 20  # bytes of whole lines handed to Arrow's JSON reader at a time
_EXACT_FLOAT = 2.0**53  # integers beyond it may have been rounded into a float column
_INT_MAX_TEXT = 8_999_999_999_999_999_999  # the largest integer the text check accepts
_INTEGER_ROLES = frozenset({"time_ns", "items", "gas_used", "status"})
_NUMBER_ROLES = NUMERIC_ROLES - _INTEGER_ROLES


class _Fallback(Exception):
    """A block Arrow's JSON reader cannot take exactly as ``json.loads`` line by line."""


def read_jsonl(path: str, file: str, problems: Problems, chunk_rows: int,
               notes: ColumnNotes, *, fast: bool = True) -> Iterator[RawChunk]:
    """Chunks of a JSON-lines source (see module doc).

    Whole lines are cut into blocks of about :data:`JSONL_BLOCK` bytes, each parsed by
    Arrow's JSON reader and converted column-wise to what the line-by-line reading gives
    (the text of each value, a number column kept as numbers where the validator reads
    them as it reads their text). A block Arrow cannot parse exactly so (a line that is
    not one JSON object, a value whose type changes within the block, two names for one
    column, a lone surrogate, ...) is read line by line with ``json.loads`` instead.
    Chunks hold the same rows either way, and invalid lines are reported as if read in
    order. ``fast=False`` reads every block line by line.
    """
    roles = list(ALIASES)
    labels = {role: names[0] for role, names in ALIASES.items()}
    ignored: dict[str, None] = {}
    size = min(chunk_rows, READ_ROWS)
    pieces: list[tuple[dict[str, pa.Array], np.ndarray]] = []
    held = 0
    found: list[tuple[int, str, str, str]] = []  # invalid lines not yet reported

    def report(before: float) -> None:
        nonlocal found
        for line, reason, where, message in found:
            if line < before:
                problems.add(reason, line, where, message)
        found = [p for p in found if p[0] >= before]

    def take(n: int) -> RawChunk:
        nonlocal held
        out, got = [], 0
        while got < n:
            cols, lines = pieces[0]
            m = min(n - got, len(lines))
            out.append(({r: a.slice(0, m) for r, a in cols.items()}, lines[:m]))
            if m == len(lines):
                pieces.pop(0)
            else:
                pieces[0] = ({r: a.slice(m) for r, a in cols.items()}, lines[m:])
            got += m
        held -= n
        return _jsonl_merge(out, roles, labels)

    with open(path, "rb") as fh, ThreadPoolExecutor(1) as pool:
        blocks = _line_blocks(fh, JSONL_BLOCK)
        # Arrow parses the next block in a thread while this one is checked
        parse = _jsonl_parse if fast else (lambda block: None)
        ahead = [(b, line, pool.submit(parse, b)) for b, line in itertools.islice(blocks, 1)]
        while ahead:
            block, first_line, parsed = ahead.pop(0)
            ahead += [(b, line, pool.submit(parse, b)) for b, line in itertools.islice(blocks, 1)]
            got = None
            if fast:
                try:
                    got = _jsonl_fast(parsed.result(), first_line, roles, ignored, problems)
                except _Fallback:
                    got = None
            if got is None:
                got = _jsonl_slow(block, first_line, roles, ignored, problems, found)
            if len(got[1]):
                pieces.append(got)
                held += len(got[1])
            while held >= size:
                chunk = take(size)
                report(chunk.lines[-1])
                yield chunk
    report(math.inf)
    notes.ignored = list(ignored)
    if held:
        yield take(held)


def _line_blocks(fh, block_size: int) -> Iterator[tuple[bytes, int]]:
    """``(whole lines, number of the first)`` of an open binary file, about
    ``block_size`` bytes at a time (a longer line makes its own block)."""
    line_no, carry = 1, b""
    while True:
        data = fh.read(block_size)
        if not data:
            if carry:
                yield carry, line_no
            return
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            carry = data
            continue
        block, carry = data[:cut], data[cut:]
        yield block, line_no
        line_no += block.count(b"\n")


def _jsonl_slow(block: bytes, first_line: int, roles: list[str], ignored: dict[str, None],
                problems: Problems, found: list) -> tuple[dict[str, pa.Array], np.ndarray]:
    """A block read line by line with ``json.loads`` (invalid lines into ``found``)."""
    cols: dict[str, list] = {role: [] for role in roles}
    lines: list[int] = []
    raws = block.split(b"\n")
    if block.endswith(b"\n"):
        raws.pop()
    for line_no, raw in enumerate(raws, first_line):
        if not raw.strip():
            problems.ignore("blank lines")
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            found.append((line_no, "json", "line", "expected a JSON object"))
            continue
        if not isinstance(obj, dict):
            found.append((line_no, "json", "line", "expected a JSON object"))
            continue
        best: dict[str, tuple] = {}
        for name, value in obj.items():
            role = ROLE_OF.get(name.strip().lower())
            if role is None:
                if len(ignored) < 50:
                    ignored[name] = None
                continue
            rank = ALIASES[role].index(name.strip().lower())
            prev = best.get(role)
            if prev is None or rank < prev[0]:
                best[role] = (rank, value)
        if "time_ns" in best and "time_s" in best:
            del best["time_s"]
        for role in roles:
            cols[role].append(_as_text(best[role][1], role) if role in best else None)
        lines.append(line_no)
    return ({role: pa.array(v, pa.string()) for role, v in cols.items()},
            np.asarray(lines, dtype=np.int64))


_JSON_SPACE = np.zeros(256, dtype=bool)
_JSON_SPACE[[ord(" "), ord("\t"), ord("\r")]] = True


def _jsonl_parse(block: bytes) -> tuple[pa.Table | None, np.ndarray]:
    """``(table, blank lines)`` of a block by Arrow's JSON reader (no table: every line is
    blank); :class:`_Fallback` when it is not one object per line as ``json.loads`` sees
    them. No side effects: runs in a thread, ahead of the block's checks."""
    # Lines of JSON whitespace are blank (Arrow skips them, the slow path ignores them);
    # every other line must look like one object, from "{" to "}" (Arrow would take a
    # "null" line for a row of nulls, and crashes on a block of only that)
    buf = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    if len(buf) and buf[-1] != 10:
        ends = np.append(ends, len(buf))
    starts = np.concatenate(([0], ends[:-1] + 1))
    last = ends - 1 - ((ends > starts) & (buf[np.maximum(ends - 1, 0)] == 13))  # before \r
    plain = (ends > starts) & (buf[np.minimum(starts, len(buf) - 1)] == ord("{")) \
        & (last >= starts) & (buf[np.maximum(last, 0)] == ord("}"))
    blank = np.zeros(len(starts), dtype=bool)
    for i in np.flatnonzero(~plain).tolist():  # the few lines not "{...}" as written
        text = block[starts[i]:ends[i]].strip(b" \t\r")
        if text and not (text[:1] == b"{" and text[-1:] == b"}"):
            raise _Fallback
        blank[i] = not text
    if blank.all():
        return None, blank
    try:
        table = pajson.read_json(pa.py_buffer(block), read_options=pajson.ReadOptions(
            block_size=ARROW_BLOCK))
    except (pa.ArrowException, ValueError):
        raise _Fallback from None
    if table.num_rows != int((~blank).sum()):  # two objects on a line, or one on two lines
        raise _Fallback
    return table, blank


def _jsonl_fast(parsed: tuple[pa.Table | None, np.ndarray], first_line: int,
                roles: list[str], ignored: dict[str, None],
                problems: Problems) -> tuple[dict[str, pa.Array], np.ndarray]:
    """A block parsed by Arrow, columns converted to what :func:`_jsonl_slow` gives."""
    table, blank = parsed
    if table is None:
        problems.ignore("blank lines", int(blank.sum()))
        return {role: pa.nulls(0, pa.null()) for role in roles}, np.zeros(0, np.int64)
    new_names: dict[str, None] = {}
    by_role: dict[str, str] = {}
    for name in table.column_names:
        role = ROLE_OF.get(name.strip().lower())
        if role is None:
            new_names[name] = None
            continue
        if role in by_role:
            raise _Fallback  # two spellings: which one a row has decides, row by row
        by_role[role] = name
    if "time_ns" in by_role and "time_s" in by_role:
        raise _Fallback
    n = table.num_rows
    cols = {}
    for role in roles:
        if role not in by_role:
            cols[role] = pa.nulls(n, pa.null())
            continue
        cols[role] = _jsonl_column(table.column(by_role[role]).combine_chunks(), role)
    for name in new_names:
        if len(ignored) < 50:
            ignored[name] = None
    problems.ignore("blank lines", int(blank.sum()))
    return cols, (first_line + np.flatnonzero(~blank)).astype(np.int64)


def _bad_where_valid(arr: pa.Array) -> pa.Array:
    return pc.if_else(arr.is_valid(), pa.scalar(_BAD), pa.scalar(None, pa.string()))


def _float_texts(arr: pa.Array) -> pa.Array:
    """Each float as :func:`_as_text` writes it: ``repr``, which for a whole number below
    1e16 is its digits and ".0" (so built column-wise); not finite: not a number."""
    f = arr.to_numpy(zero_copy_only=False)
    whole = np.isfinite(f) & (np.abs(f) < 1e16) & (f == np.round(f))
    out = pc.binary_join_element_wise(
        pa.array(np.where(whole, f, 0).astype(np.int64)).cast(pa.string()), ".0", "")
    rest = np.flatnonzero(~whole & ~np.isnan(f) | (np.isnan(f) & arr.is_valid().to_numpy(
        zero_copy_only=False)))
    if len(rest):
        texts = out.to_pylist()
        for i in rest.tolist():
            v = float(f[i])
            texts[i] = repr(v) if math.isfinite(v) else _BAD
        out = pa.array(texts, pa.string())
    return pc.if_else(arr.is_valid(), out, pa.scalar(None, pa.string()))


def _jsonl_column(arr: pa.Array, role: str) -> pa.Array:
    """One role's values of a block as :func:`_as_text` reads them; numbers may stay
    numbers (int64, or float64 for ``cu`` / ``latency_ms`` / ``retry_after_s``) where the
    validator reads them as it reads their text."""
    typ = arr.type
    if pa.types.is_null(typ):
        return arr
    is_int, is_float = pa.types.is_int64(typ), pa.types.is_float64(typ)
    if pa.types.is_string(typ):
        return _bad_where_valid(arr) if role in NUMERIC_ROLES else arr
    if not (is_int or is_float) or role in TEXT_ROLES:
        return _bad_where_valid(arr)  # booleans, objects, arrays; numbers for text
    if role in _NUMBER_ROLES:
        return arr
    if is_int:  # integer roles keep ints; a time in seconds is read as text
        return arr if role != "time_s" else arr.cast(pa.string())
    # a float column where an integer (or seconds) is expected: the text of each float,
    # unless an integer too large for a float was rounded by Arrow's promotion to float
    finite = pc.filter(arr, pc.is_finite(arr))
    big = pc.max(pc.abs(finite)).as_py() if len(finite) else None
    if big is not None and big >= _EXACT_FLOAT:
        raise _Fallback
    return _float_texts(arr)


def _jsonl_merge(pieces: list[tuple[dict[str, pa.Array], np.ndarray]], roles: list[str],
                 labels: dict[str, str]) -> RawChunk:
    """One chunk from pieces of blocks: per role one array, numbers where every piece
    holds numbers the validator reads as their text, else text (as line by line)."""
    lines = np.concatenate([p[1] for p in pieces])
    n = len(lines)
    raw = {}
    for role in roles:
        parts = [p[0][role] for p in pieces]
        kinds = {str(a.type) for a in parts if a.null_count < len(a)}
        if not kinds:
            if role in ("api", "method"):
                raw[role] = pa.nulls(n, pa.string())
            continue
        if kinds == {"int64"} and not (role in _INTEGER_ROLES and _beyond_text(parts)):
            raw[role] = pa.concat_arrays([a.cast(pa.int64()) for a in parts])
        elif kinds <= {"int64", "double"} and role in _NUMBER_ROLES:
            # unsafe: an integer beyond 2**53 rounds to the nearest double, as float()
            # of the same JSON number does line by line (a safe cast raised)
            raw[role] = pa.concat_arrays([a.cast(pa.float64(), safe=False) for a in parts])
        else:
            raw[role] = pa.concat_arrays([_as_texts(a) for a in parts])
    if "time_ns" not in raw and "time_s" not in raw:
        raw["time_s"] = pa.nulls(n, pa.string())
    return RawChunk(raw, labels, lines)


def _beyond_text(parts: list[pa.Array]) -> bool:
    """``parts`` hold an integer the text check refuses (more than 19 digits' reach)."""
    for a in parts:
        if pa.types.is_int64(a.type) and a.null_count < len(a):
            mm = pc.min_max(a).as_py()
            if mm["max"] > _INT_MAX_TEXT or mm["min"] < -_INT_MAX_TEXT:
                return True
    return False


def _as_texts(arr: pa.Array) -> pa.Array:
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.string())
    if pa.types.is_int64(arr.type):
        return arr.cast(pa.string())
    if pa.types.is_float64(arr.type):  # a number role's floats
        return _float_texts(arr)
    return arr


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
