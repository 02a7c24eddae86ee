"""The CI gate: baselines, noise-aware comparison and its reports.

A *baseline* (:mod:`.baseline`) holds a scenario's headline figures per tier (with
Student-t intervals when replicated) and its provenance. :mod:`.compare` compares two
of them, metric by metric from the catalogue (:mod:`.catalogue`), with tolerances from
the catalogue, the scenario's ``[check]`` table (:mod:`sim.config.check`) and the
command line (:mod:`.settings`), and lists the inputs that changed (:mod:`.fingerprint`).
:mod:`.markdown`, :mod:`.junit` and :mod:`.comment` render the verdicts, the bill's
headline first (:mod:`.headline`); ``sim/cli/regression.py`` is the command line
(``capsim baseline``, ``check``, ``compare``). :mod:`.workflow` is the GitHub Actions
workflow ``capsim ci init`` (``sim/cli/ci.py``) writes for a user's repository.

    base = load_baseline("reports/baselines/searcher.json")
    now = Baseline.from_summaries(replicate("workloads/searcher.toml", ...), ...)
    result = compare(base, now, tolerances(scenario.check, {"throttle_rate": 0.01}))
    result.exit_code   # 0 nothing regressed, 1 a regression
"""
