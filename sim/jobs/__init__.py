"""Jobs built on :func:`sim.run`: replications (and sweeps, CI checks) of a scenario."""
