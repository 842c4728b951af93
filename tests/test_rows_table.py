"""`rows_table` types every column as pyarrow's inference from the Python
values does, whether polars builds it (numbers, text, booleans, nulls) or
pyarrow (anything else), and raises what pyarrow raises."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.platform.storage.store import rows_table

VALUES = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.text(max_size=5),
    st.sampled_from([np.float64(1.5), np.int64(3), np.bool_(True), -0.0, 2**63, [1, 2], b"x"]),
)


def pyarrows(rows: list[dict]) -> pa.Table:
    keys = dict.fromkeys(k for row in rows for k in row)
    return pa.Table.from_pydict({k: [row.get(k) for row in rows] for k in keys})


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and values, floats by their bits (NaN, -0.0)."""

    def bits(t):
        return [[v.hex() if isinstance(v, float) else v for v in c.to_pylist()] for c in t.columns]

    return a.schema == b.schema and bits(a) == bits(b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from("abcd"), st.one_of(VALUES, st.floats()), max_size=4), max_size=8))
def test_rows_table_is_pyarrows(rows):
    try:
        expected = pyarrows(rows)
    except Exception as err:  # noqa: BLE001 - pyarrow refuses: so must rows_table, alike
        with pytest.raises(type(err)):
            rows_table(rows)
        return
    assert same(rows_table(rows), expected)


def test_plain_rows_do_not_import_pandas():
    """A summary's rows (numbers, text, nulls) are encoded without pyarrow's pandas import."""
    code = (
        "import sys\n"
        "from schedlab.platform.storage.store import rows_table\n"
        "rows_table([{'config_id': 'a', 'mst': 1.5, 'njobs': 50, 'code_sha256': None}, {'config_id': 'b'}])\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
