"""A run's open-loop demand drawn once and handed to every tier (a demand spool).

:meth:`Plan.demand_blocks <sim.workload.demand.Plan.demand_blocks>` draws the demand
anew on each pass: for a recorded trace that is reading and converting the whole file
(at 400 requests/s about 2 CPU-s per tier-hour; reading the spool back costs a sixth of
that: ``benchmarks/bench_demand_once.py``),
and every tier of ``capsim run`` made its own pass (and, in a worker process of
``--jobs N``, its own scan of the trace first). :func:`spool_demand` makes the one pass,
writes the blocks to a Parquet file (LZ4, as the attempt spools; row groups of
:data:`READ_ROWS` rows gathered from several blocks or split from a large one), and
returns a :class:`SpooledPlan`: the same plan, whose
:meth:`~SpooledPlan.demand_blocks` reads the blocks back, column for column the arrays
the draw made (so every attempt row is bit for bit the same), a row group or a few
at a time (memory stays flat in run length). It holds no trace reader, so it pickles small
and a worker process or a Dask worker on this machine needs neither the trace nor a scan.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from .demand import _COLUMNS, _DTYPES, SLICE_S, Demand, Plan

#: How the demand spool is written: as the attempt spools (``sim.model.sinks``, a layer
#: above), LZ4 without dictionaries: cheap to write, read back once per tier, then deleted.
DEMAND_SPOOL_OPTIONS = {"compression": "lz4", "use_dictionary": False}


@dataclass
class SpooledPlan(Plan):
    """A :class:`~sim.workload.demand.Plan` whose open-loop demand was drawn once into
    ``demand_path`` (by blocks of ``slice_s`` seconds); closed-loop drawers are the plan's."""

    demand_path: str = ""
    slice_s: float = SLICE_S
    block_rows: tuple[int, ...] = ()  # rows of each block, in order

    def demand_blocks(self, slice_s: float = SLICE_S) -> Iterator[Demand]:
        """The spooled blocks, in order, read :data:`READ_ROWS` rows or more at a time
        (a read of a row group costs about as much for 2,000 rows as for 60,000). A
        block's arrays may be read-only views of what was read: copy before writing."""
        if slice_s != self.slice_s:
            raise ValueError(f"the demand was spooled by {self.slice_s:g} s blocks, "
                             f"not {slice_s:g} s")
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.demand_path, memory_map=False) as f:
            groups = iter(range(f.num_row_groups))
            cols, at = [np.empty(0, dtype=d) for d in _DTYPES], 0
            for n in self.block_rows:
                if len(cols[0]) - at < n:  # a block is one row group, or several if large
                    cols, at = _read_ahead(f, groups, [c[at:] for c in cols], n), 0
                    if len(cols[0]) < n:
                        raise ValueError(f"the demand spool {self.demand_path} ends "
                                         f"before its blocks do")
                yield Demand(*(c[at:at + n] for c in cols))
                at += n


#: Rows read from the demand spool at a time, at least (whole row groups).
READ_ROWS = 1 << 16


def _read_ahead(f, groups: Iterator[int], left: list[np.ndarray], n: int
                ) -> list[np.ndarray]:
    """``left`` followed by the next row groups of ``f``, at least ``n`` rows in all
    and :data:`READ_ROWS` unless the file ends first."""
    import pyarrow as pa

    want, got, ids = max(n, READ_ROWS), len(left[0]), []
    for g in groups:
        ids.append(g)
        got += f.metadata.row_group(g).num_rows
        if got >= want:
            break
    table = f.read_row_groups(ids)
    cols = [np.concatenate([old, table.column(j).to_numpy()]) if len(old)
            else table.column(j).to_numpy() for j, old in enumerate(left)]
    del table
    pa.default_memory_pool().release_unused()  # Arrow's allocator would keep the blocks
    return cols


def _schema():
    import pyarrow as pa

    return pa.schema([(n, pa.from_numpy_dtype(np.dtype(d)))
                      for n, d in zip(_COLUMNS, _DTYPES, strict=True)])


def spool_demand(plan: Plan, folder: str | Path, slice_s: float = SLICE_S,
                 group_rows: int = READ_ROWS) -> SpooledPlan:
    """Draw ``plan``'s open-loop demand once into ``folder/demand.parquet``; the
    :class:`SpooledPlan` reading it (``folder`` must outlive every tier's run).
    ``group_rows``: rows per row group (the last may have fewer): blocks are gathered
    into row groups of that size, which Parquet decodes at about half the CPU of one
    row group per block."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(folder) / "demand.parquet"
    schema = _schema()
    block_rows, held, n_held = [], [], 0
    with pq.ParquetWriter(path, schema, **DEMAND_SPOOL_OPTIONS) as writer:
        for block in plan.demand_blocks(slice_s):
            held.append(pa.Table.from_arrays([getattr(block, n) for n in _COLUMNS],
                                             schema=schema))
            block_rows.append(len(block))
            n_held += len(block)
            if n_held >= group_rows:
                table = pa.concat_tables(held)
                full = n_held - n_held % group_rows
                writer.write_table(table.slice(0, full), row_group_size=group_rows)
                held, n_held = [table.slice(full)], n_held - full
        if n_held:
            writer.write_table(pa.concat_tables(held), row_group_size=group_rows)
    shared = {f.name: getattr(plan, f.name) for f in fields(Plan)}
    shared["traces"] = {}  # read once, above: the spooled plan needs no reader
    return SpooledPlan(**shared, demand_path=str(path), slice_s=slice_s,
                       block_rows=tuple(block_rows))
