"""Parameter search under common random numbers: ``[search]`` in a sweep
spec (docs/search.md). space (the searched parameters, checked against their
declarations; Optuna distributions; a trial as a configuration), loop (ask,
run as an ordinary sweep, tell; the journal; resume), select (the final
selection on fresh instances), figure (convergence)."""
