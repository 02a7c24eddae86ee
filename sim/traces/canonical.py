"""Turning validated rows into canonical chunks: key pseudonyms, text redaction, types.

Both importer families end here: the tabular one (CSV, JSONL, Parquet) hands over
whole validated columns, the record one (HAR, log lines) collects rows in a
:class:`RecordBuffer`. :func:`finalize` registers every raw key, replaces it by its
pseudonym, redacts the kept text fields (working on distinct values only, so the cost
does not grow with the row count) and casts to :data:`~sim.traces.schema.SCHEMA`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.pseudonyms import pseudonym
from .redaction import KeyRegistry, is_redacted
from .schema import COLUMNS, NO_KEY, SCHEMA, TEXT_COLUMNS


def _map_distinct(values: pa.Array, fn) -> pa.Array:
    """``fn`` applied to each distinct non-null value of a string array."""
    if len(values) == 0 or values.null_count == len(values):
        return values
    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    mapped = pa.array([fn(v) for v in encoded.dictionary.to_pylist()], pa.string())
    return pc.take(mapped, encoded.indices)


def _encode_mapped(values: pa.Array, fn) -> pa.DictionaryArray:
    """``dictionary_encode`` of ``fn`` applied to each value, computed on the distinct
    values: the dictionary in order of first appearance, as encoding the mapped column
    would give (when ``fn`` maps several values to one, the first one's place counts)."""
    encoded = pc.dictionary_encode(values)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    mapped = [fn(v) for v in encoded.dictionary.to_pylist()]
    if len(set(mapped)) == len(mapped):
        return pa.DictionaryArray.from_arrays(encoded.indices, pa.array(mapped, pa.string()))
    again = pc.dictionary_encode(pa.array(mapped, pa.string()))
    return pa.DictionaryArray.from_arrays(pc.take(again.indices, encoded.indices),
                                          again.dictionary)


def _same_or_mapped(values: pa.Array, fn) -> pa.Array:
    """:func:`_map_distinct`, or ``values`` itself when ``fn`` changes no value."""
    if len(values) == 0 or values.null_count == len(values):
        return values
    distinct = pc.unique(values).drop_null().to_pylist()
    if all(fn(v) == v for v in distinct):
        return values
    return _map_distinct(values, fn)


def _key_pseudonym(registry: KeyRegistry, raw: str) -> str:
    if is_redacted(raw):
        return raw
    registry.add(raw)
    return pseudonym(raw)


def _strip_query(method: str) -> str:
    return method.split("?", 1)[0].rstrip() or method


_PREPARE = {"method": _strip_query}  # applied before redaction


def finalize(cols: dict[str, Any], registry: KeyRegistry, region: str | None = None
             ) -> pa.Table:
    """Canonical table from validated columns (``key`` still raw, null meaning no key).

    ``cols`` maps column names of :data:`~sim.traces.schema.COLUMNS` to Arrow arrays,
    numpy arrays or lists; missing nullable columns become nulls. ``region`` (the
    ``--region`` option) replaces every row's region.
    """
    n = len(cols["time_ns"])
    out: dict[str, pa.Array] = {}
    for name in COLUMNS:
        value = cols.get(name)
        typ = SCHEMA.field(name).type
        base = typ.value_type if pa.types.is_dictionary(typ) else typ
        if value is None:
            out[name] = pa.nulls(n, base)
        elif isinstance(value, pa.Array | pa.ChunkedArray):
            out[name] = value.cast(base)
        else:
            out[name] = pa.array(value, base)
    # dictionary columns are encoded once and mapped on their distinct values; the key
    # first, so that the text columns are redacted with this chunk's keys registered
    keys = pc.fill_null(out["key"], NO_KEY)
    out["key"] = _encode_mapped(keys, lambda k: _key_pseudonym(registry, k))
    if region is not None:
        out["region"] = pa.array(np.full(n, region, dtype=object), pa.string())
    for name in TEXT_COLUMNS:
        first = _PREPARE.get(name)
        fn = registry.redact if first is None else (
            lambda v, first=first: registry.redact(first(v)))
        if pa.types.is_dictionary(SCHEMA.field(name).type):
            out[name] = _encode_mapped(out[name], fn)
        else:
            out[name] = _same_or_mapped(out[name], fn)
    arrays = []
    for name in COLUMNS:
        arr = out[name]
        if pa.types.is_dictionary(SCHEMA.field(name).type) and \
                not isinstance(arr, pa.DictionaryArray):
            arr = pc.dictionary_encode(arr)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


class RecordBuffer:
    """Canonical rows collected one at a time, handed over as columns."""

    def __init__(self) -> None:
        self._cols: dict[str, list] = {name: [] for name in COLUMNS}

    def __len__(self) -> int:
        return len(self._cols["time_ns"])

    def append(self, **row: Any) -> None:
        """Add one row; omitted nullable columns are null."""
        self.add(row)

    def add(self, row: dict[str, Any]) -> None:
        """:meth:`append` of a row already in a dict."""
        get = row.get
        for name, col in self._cols.items():
            col.append(get(name))

    def take(self) -> dict[str, list]:
        """The collected columns; the buffer starts empty again."""
        cols, self._cols = self._cols, {name: [] for name in COLUMNS}
        return cols
