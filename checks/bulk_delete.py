"""Deleting many rows nothing refers to any more, without reading them.

Django's delete() reads every row into Python first unless the model has no
relations that point at it (its fast path), and page results and deliveries
have such relations (links to captures, attempts) even once those are
emptied. So their discard() empties the relations, then deletes the rows
here: their ids are read (no row is built), and a statement removes each
CHUNK of them. No signals are sent; the models have no receivers."""

from __future__ import annotations

from django.db import connections
from django.db.models import QuerySet

CHUNK = 500  # under SQLite's oldest limit of 999 parameters a statement


def delete_rows(rows: QuerySet) -> int:
    """Delete `rows`, a statement per CHUNK of their ids; how many went."""
    model, connection = rows.model, connections[rows.db]
    pk = model._meta.pk
    table = connection.ops.quote_name(model._meta.db_table)
    column = connection.ops.quote_name(pk.column)
    found = rows.values_list("pk", flat=True)
    ids = [pk.get_db_prep_value(value, connection) for value in found]
    deleted = 0
    with connection.cursor() as cursor:
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            # Only quoted names of our own tables go in; the ids are parameters.
            sql = f"DELETE FROM {table} WHERE {column} IN ({marks})"  # noqa: S608
            cursor.execute(sql, chunk)
            deleted += cursor.rowcount
    return deleted
