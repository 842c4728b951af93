"""Tolerances shared by a reference engine and the compiled helpers of
``schedlab.sim.common.jit``: declared once here, below both, so the shared
kernel helpers never import an engine."""

#: Relative tolerance when mapping a time to its decision epoch (the packing
#: engine's slotted arrivals and departures: ``ceil(x / Δ - EPOCH_TOL * max(1, x / Δ))``).
EPOCH_TOL = 1e-9
