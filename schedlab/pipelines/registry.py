"""The pipelines, by name."""

from __future__ import annotations

from schedlab.pipelines.base import Pipeline
from schedlab.pipelines.pg_fig4 import PIPELINE as PG_FIG4
from schedlab.pipelines.psbs_shape import PIPELINE as PSBS_SHAPE
from schedlab.pipelines.psbs_sigma import PIPELINE as PSBS_SIGMA

PIPELINES: dict[str, Pipeline] = {p.name: p for p in (PSBS_SHAPE, PSBS_SIGMA, PG_FIG4)}
