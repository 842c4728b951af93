"""The pipelines, by name."""

from __future__ import annotations

from schedlab.pipelines.base import Pipeline
from schedlab.pipelines.dfrs_fig1 import PIPELINE as DFRS_FIG1
from schedlab.pipelines.dfrs_period import PIPELINE as DFRS_PERIOD
from schedlab.pipelines.dfrs_table import PIPELINE as DFRS_TABLE
from schedlab.pipelines.pg_fig3 import PIPELINE as PG_FIG3
from schedlab.pipelines.pg_fig4 import PIPELINE as PG_FIG4
from schedlab.pipelines.pg_fig5 import PIPELINE as PG_FIG5
from schedlab.pipelines.psbs_ecdf import PIPELINE as PSBS_ECDF
from schedlab.pipelines.psbs_fb2010 import PIPELINE as PSBS_FB2010
from schedlab.pipelines.psbs_heatmap import PIPELINE as PSBS_HEATMAP
from schedlab.pipelines.psbs_ircache import PIPELINE as PSBS_IRCACHE
from schedlab.pipelines.psbs_load import PIPELINE as PSBS_LOAD
from schedlab.pipelines.psbs_pareto import PIPELINE as PSBS_PARETO
from schedlab.pipelines.psbs_shape import PIPELINE as PSBS_SHAPE
from schedlab.pipelines.psbs_sigma import PIPELINE as PSBS_SIGMA
from schedlab.pipelines.psbs_slowdown import PIPELINE as PSBS_SLOWDOWN
from schedlab.pipelines.psbs_weights import PIPELINE as PSBS_WEIGHTS
from schedlab.pipelines.tetris_fairness import PIPELINE as TETRIS_FAIRNESS
from schedlab.pipelines.tetris_packing import PIPELINE as TETRIS_PACKING

PIPELINES: dict[str, Pipeline] = {p.name: p for p in (
    PSBS_SHAPE, PSBS_SIGMA, PG_FIG4, PSBS_WEIGHTS, PSBS_PARETO, PSBS_LOAD, PSBS_FB2010, PSBS_SLOWDOWN, PSBS_HEATMAP,
    PG_FIG3, PG_FIG5, PSBS_IRCACHE, PSBS_ECDF, TETRIS_PACKING, TETRIS_FAIRNESS, DFRS_FIG1, DFRS_TABLE, DFRS_PERIOD)}
