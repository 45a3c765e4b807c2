"""Multi-row INSERTs for the rows a check writes per batch of pages.

Django's bulk_create() sends a batch to PostgreSQL as one UNNEST(array, ...)
parameter per column, and psycopg builds those arrays element by element in
Python. For the ten-odd rows a check records per transaction that costs about
two and a half times the CPU of a plain ``INSERT ... VALUES (...), (...)``,
and this runs on the worker thread that every other part of a check waits for
(bench/RESULTS.md, "where the CPU goes"). insert_rows() writes the same rows
the plain way, each value prepared by its field exactly as bulk_create()
prepares it (pre_save() for auto_now fields, get_db_prep_save() for the
database's types), so it behaves the same on every backend Django supports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, models, router


def insert_rows(
    objs: Sequence[models.Model],
    *,
    unique_fields: Sequence[str] = (),
    update_fields: Sequence[str] = (),
    returning: Sequence[str] = (),
) -> list[tuple[Any, ...]]:
    """INSERT `objs` (instances of one model) in as few statements as the
    database allows; the rows of `returning` columns come back in order.

    With `unique_fields`, a row that conflicts on them updates
    `update_fields` instead (ON CONFLICT ... DO UPDATE; the row is then
    returned too), or is skipped when `update_fields` is empty. Auto-increment
    primary keys are left to the database, as bulk_create() does; other
    fields are written as the instances hold them.
    """
    if not objs:
        return []
    model = type(objs[0])
    opts = model._meta
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    fields = [
        field
        for field in opts.concrete_fields
        if not (field.primary_key and getattr(field, "db_returning", False))
    ]

    def column(name: str) -> str:
        return quote(opts.get_field(name).column)  # type: ignore[union-attr]

    tail = ""
    if unique_fields:
        target = ", ".join(column(name) for name in unique_fields)
        if update_fields:
            sets = ", ".join(
                f"{column(name)} = EXCLUDED.{column(name)}" for name in update_fields
            )
            tail = f" ON CONFLICT ({target}) DO UPDATE SET {sets}"
        else:
            tail = f" ON CONFLICT ({target}) DO NOTHING"
    if returning:
        tail += " RETURNING " + ", ".join(column(name) for name in returning)
    # Only quoted names from the model's own _meta go into the text; every
    # value is a parameter.
    head = (
        f"INSERT INTO {quote(opts.db_table)} "  # noqa: S608
        f"({', '.join(quote(field.column) for field in fields)}) VALUES "
    )
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    # SQLite caps the parameters of one statement; PostgreSQL has no such cap.
    size = connection.ops.bulk_batch_size(fields, objs) or len(objs)
    rows: list[tuple[Any, ...]] = []
    with connection.cursor() as cursor:
        for start in range(0, len(objs), size):
            chunk = objs[start : start + size]
            params = [
                field.get_db_prep_save(field.pre_save(obj, True), connection)
                for obj in chunk
                for field in fields
            ]
            cursor.execute(head + ", ".join([row] * len(chunk)) + tail, params)
            if returning:
                rows.extend(tuple(values) for values in cursor.fetchall())
    return rows
