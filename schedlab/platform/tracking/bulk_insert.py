"""Rows appended to an MLflow table inside an open transaction, through the
database driver itself: SQLite's ``executemany`` of tuples, PostgreSQL's
``COPY ... FROM STDIN`` (psycopg2's ``copy_expert``, CSV).

SQLAlchemy's ``session.execute(insert(table), dicts)`` is the same
statement, but it binds and type-processes every value of every row in
Python: at about 45 rows per configuration run it was a third of what
``schedlab track`` spent per run. Here the rows are tuples in the column
order given, written in the caller's transaction (the session's own DBAPI
connection), so a transaction still commits all of a batch's runs or none.

Values are what the tables hold: str, int, float, bool (``is_nan``) or None.
A PostgreSQL COPY row is CSV, written by Python's ``csv`` module (C, not a
Python function per value: per value it was most of the Python time spent
on a PostgreSQL batch): a string is always quoted (so an empty string stays
one; ``QUOTE_NONNUMERIC``), a None is an unquoted empty field (``NULL``), a
float is its ``repr`` (shortest round-trip form: PostgreSQL reads back the
same double), a bool is ``True``/``False`` (PostgreSQL's boolean input takes
either case).
"""

from __future__ import annotations

import csv
import io
import sqlite3
from collections.abc import Sequence
from typing import Any

#: Rows per COPY buffer (PostgreSQL) and per ``executemany`` (SQLite): bounded memory per call.
CHUNK_ROWS = 50_000
#: SQLite's page cache for a connection that writes runs in bulk (KiB; its default is 2,000): the
#: tables' indexes are keyed by random run ids, so a batch touches pages all over each of them.
SQLITE_CACHE_KIB = 262_144


class _Null(int):
    """None in a COPY row: a number to ``csv`` (so not quoted) whose text is
    empty -- the unquoted empty field CSV COPY reads as NULL (``csv`` itself
    writes None as a quoted empty string, which COPY reads as '')."""

    def __str__(self) -> str:
        return ""


_NULL = _Null()


def copy_text(rows: Sequence[Sequence[Any]]) -> str:
    """The CSV text of ``rows`` as PostgreSQL's ``COPY ... (FORMAT csv)`` reads it."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    writer.writerows(row if None not in row else [_NULL if v is None else v for v in row] for row in rows)
    return out.getvalue()


def insert_rows(
    session: Any, dialect: str, tables: Sequence[str], columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Append ``rows`` (tuples in ``columns`` order) to each of ``tables``
    (``metrics`` and ``latest_metrics`` take the same rows: their text is
    built once) in the session's open transaction (``dialect``: MLflow's
    ``db_type``)."""
    if not rows:
        return
    names = ", ".join(columns)
    dbapi = session.connection().connection  # the pooled DBAPI connection of this transaction
    cursor = dbapi.cursor()
    try:
        copy = dialect == "postgresql" and hasattr(cursor, "copy_expert")  # psycopg2
        qmark = isinstance(dbapi.driver_connection, sqlite3.Connection)
        if qmark:
            cursor.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
        for start in range(0, len(rows), CHUNK_ROWS):
            chunk = rows[start : start + CHUNK_ROWS]
            text = copy_text(chunk) if copy else ""
            for table in tables:
                if copy:
                    cursor.copy_expert(f"COPY {table} ({names}) FROM STDIN WITH (FORMAT csv)", io.StringIO(text))
                elif qmark:  # sqlite3
                    marks = ", ".join("?" for _ in columns)
                    cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", chunk)  # noqa: S608 - fixed names
                else:  # another driver: SQLAlchemy's own executemany, named parameters
                    from sqlalchemy import text as sql

                    binds = ", ".join(f":c{i}" for i in range(len(columns)))
                    statement = sql(f"INSERT INTO {table} ({names}) VALUES ({binds})")  # noqa: S608 - fixed names
                    session.execute(statement, [{f"c{i}": v for i, v in enumerate(row)} for row in chunk])
    finally:
        cursor.close()
