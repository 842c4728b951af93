"""schedlab's tests: a regular package, so `tests.*` imports resolve here even when an
installed distribution ships a top-level `tests` package of its own (evalys does)."""
