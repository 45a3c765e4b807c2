"""INSERTs for the rows a check writes per batch of pages.

Django's bulk_create() sends a batch to PostgreSQL as one UNNEST(array, ...)
parameter per column, and psycopg builds those arrays element by element in
Python; one multi-row ``VALUES (...), (...)`` statement instead has too many
parameters for psycopg's cache of parsed statements (50 at most), so it parses
every batch's placeholders again in Python. insert_rows() sends one row per
statement through executemany(): parsed once, all rows in one pipeline. Alone,
recording a batch of new pages costs ~0.3 ms of the worker thread's CPU per
page this way against ~0.38 with bulk_create(), on the thread that every other
part of a check waits for (bench/RESULTS.md, "where the CPU goes"). Each value
is prepared by its field exactly as bulk_create() prepares it (pre_save() for
auto_now fields, get_db_prep_save() for the database's types), so the rows are
the same on every backend Django supports.
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
    """INSERT `objs` (instances of one model); the rows of `returning`
    columns come back in order (one multi-row statement per batch, as
    executemany() returns nothing).

    With `unique_fields`, a row that conflicts on them updates
    `update_fields` instead (ON CONFLICT ... DO UPDATE; the row is then
    returned too), or is skipped when `update_fields` is empty. Auto-increment
    primary keys are left to the database, as bulk_create() does; other
    fields are written as the instances hold them, and the instances are
    marked saved to that database afterwards, as bulk_create() leaves them.
    """
    if not objs:
        return []
    model = type(objs[0])
    opts = model._meta
    alias = router.db_for_write(model)
    connection = connections[alias]
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

    def params(obj: models.Model) -> list[Any]:
        return [
            field.get_db_prep_save(field.pre_save(obj, True), connection)
            for field in fields
        ]

    rows: list[tuple[Any, ...]] = []
    with connection.cursor() as cursor:
        if not returning:
            # One row per statement: psycopg parses a statement's placeholders
            # once and caches that only up to 50 parameters, and sends all the
            # rows in one pipeline.
            cursor.executemany(head + row + tail, [params(obj) for obj in objs])
        else:
            # SQLite caps the parameters of one statement; PostgreSQL does not.
            size = connection.ops.bulk_batch_size(fields, objs) or len(objs)
            for start in range(0, len(objs), size):
                chunk = objs[start : start + size]
                values = [value for obj in chunk for value in params(obj)]
                cursor.execute(head + ", ".join([row] * len(chunk)) + tail, values)
                rows.extend(tuple(found) for found in cursor.fetchall())
    for obj in objs:
        obj._state.adding, obj._state.db = False, alias
    return rows
