"""The database's clock, as workers read it (checks.shared_clock): measured
inside whatever transaction asks the time, and harmless to it when the
measurement fails."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from checks import shared_clock
from monitors.models import Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker(monkeypatch):
    """This process measures the database's clock, and is due to."""
    monkeypatch.setattr(shared_clock, "_enabled", True)
    monkeypatch.setattr(shared_clock, "_measured_at", None)


def test_a_failed_measurement_inside_a_transaction_leaves_it_usable(team, worker):
    """The time is asked inside transactions (a check's batches are stamped
    in one): a measurement whose query failed left PostgreSQL's transaction
    aborted, and every later statement of it failed."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite is on the database's machine: nothing is measured")
    with transaction.atomic():
        with connection.cursor() as cursor:
            # A clock_timestamp() found before the built-in one, that fails.
            cursor.execute(
                "CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz "
                "LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no clock'; END $$"
            )
            cursor.execute("SET LOCAL search_path = public, pg_catalog")

        shared_clock.now()

        assert Team.objects.filter(pk=team.pk).exists()
