"""Jobs built on :func:`sim.run`: replications of a scenario, sweeps and headroom
searches, run in this process, on a local process pool or on Dask distributed."""
