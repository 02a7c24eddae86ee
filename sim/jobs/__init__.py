"""Jobs on top of :func:`sim.run`: sweeps with replications and headroom searches, run in
this process, on a local process pool or on Dask distributed."""
