"""A forged admin action (a POST naming rows by ids that are not ids of that
model: letters for a number, junk for a UUID, a number past any column) is
answered with a message on the list, never a server error, and changes
nothing."""

from __future__ import annotations

import uuid

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from monitors.models import Monitor
from tests.test_admin import make_monitor

pytestmark = pytest.mark.django_db

JUNK_IDS = [
    "abc",
    "",
    "1.5",
    "-",
    "00000000-0000-0000-0000-00000000000z",
    "99999999999999999999999999",
    "1; DROP TABLE x",
    "\u00e9",
    "1\x00",
]


def _actions() -> list[tuple[str, str]]:
    """(admin changelist URL name, action) for every action of every model
    registered in the admin, Django's own delete included."""
    found = []
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        own = admin.site.get_model_admin(model).actions or []
        names = {a if isinstance(a, str) else a.__name__ for a in own}
        names.add("delete_selected")
        url = f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"
        found += [(url, name) for name in sorted(names)]
    return found


@pytest.mark.parametrize(("url", "action"), _actions())
def test_an_action_on_ids_that_are_not_ids_answers_without_a_server_error(
    admin_client, url, action
):
    for junk in JUNK_IDS:
        for confirmed in ({}, {"post": "yes"}):
            response = admin_client.post(
                reverse(url),
                {"action": action, "index": "0", ACTION_CHECKBOX_NAME: [junk]}
                | confirmed,
            )
            assert response.status_code == 400, (action, junk, confirmed)


def test_a_forged_pause_naming_a_real_monitor_beside_junk_changes_nothing(
    admin_client, team
):
    monitor = make_monitor(team)

    response = admin_client.post(
        reverse("admin:monitors_monitor_changelist"),
        {
            "action": "pause_selected",
            "index": "0",
            ACTION_CHECKBOX_NAME: [str(monitor.pk), "not-a-uuid"],
        },
    )

    assert response.status_code == 400
    monitor.refresh_from_db()
    assert monitor.status == Monitor.Status.ACTIVE


def test_an_action_on_well_formed_ids_still_acts(admin_client, team):
    monitor = make_monitor(team)

    response = admin_client.post(
        reverse("admin:monitors_monitor_changelist"),
        {
            "action": "pause_selected",
            "index": "0",
            ACTION_CHECKBOX_NAME: [str(monitor.pk), str(uuid.uuid4())],
        },
    )

    assert response.status_code == 302
    monitor.refresh_from_db()
    assert monitor.status == Monitor.Status.PAUSED
