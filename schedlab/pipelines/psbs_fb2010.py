"""PSBS Fig. 14 (psbs_fb2010.toml): the one claim with two comparisons per point."""

from __future__ import annotations

from schedlab.pipelines.common import values, xs


def both_beat_ps(data, claim, empty: str = ""):
    """FSPE and PSBS both below PS at every sigma <= ``where``'s bound (shared with psbs-ircache)."""
    r = values(data.table)
    moderate = [sg for sg in xs(data.table, "sigma") if sg <= claim.where["sigma"]["<="]]
    bad = [
        sg
        for sg in moderate
        if not (r("PSBS", sigma=sg) < r("PS", sigma=sg) and r("FSPE", sigma=sg) < r("PS", sigma=sg))
    ]
    return claim.verdict(
        not bad,
        "; ".join(
            f"sigma {sg:g}: PSBS {r('PSBS', sigma=sg):.2f}, FSPE {r('FSPE', sigma=sg):.2f}, PS {r('PS', sigma=sg):.2f}"
            for sg in moderate
        )
        or empty,
    )
