from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from monitors.models import ApiKey, Membership, Team
from teams.activity import Actor, Kind, record


class Command(BaseCommand):
    help = (
        "First start only: create a demo team, an admin login and an API key, and "
        "print them once. Does nothing when any user exists."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        if user_model.objects.exists():
            self.stdout.write(_already_set_up(user_model))
            return
        password = secrets.token_urlsafe(12)
        admin = user_model.objects.create_superuser(
            "admin", "admin@example.com", password
        )
        team = Team.objects.create(name="Demo team", slug="demo")
        Membership.objects.create(team=team, user=admin, role=Membership.Role.OWNER)
        team.rotate_webhook_secret()
        _, raw_key = ApiKey.issue(team, name="first key", created_by=admin)
        actor = Actor.command()
        record(actor, team, Kind.MEMBER_JOINED, member="admin", role="owner")
        record(actor, team, Kind.KEY_CREATED, name="first key", scope="write")
        base = settings.PUBLIC_BASE_URL
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "=" * 64,
                    " Pagewatch is ready. These are shown only this once:",
                    f"   Dashboard : {base}/",
                    f"   Admin     : {base}/admin/",
                    "   Login     : admin",
                    f"   Password  : {password}",
                    f"   API key   : {raw_key}",
                    f"   API docs  : {base}/v2/docs",
                    "=" * 64,
                    "",
                ]
            )
        )


def _already_set_up(user_model: Any) -> str:
    """The first start's password was shown once, in a terminal long since
    scrolled away or closed: say where to sign in, and how to get back in
    without deleting var/ (which would delete every monitor with it)."""
    base = settings.PUBLIC_BASE_URL
    admin = (
        user_model.objects.filter(is_superuser=True, is_active=True)
        .order_by("date_joined", "pk")
        .first()
    )
    if admin is None:
        recover = "No administrator: .venv/bin/python manage.py createsuperuser"
    else:
        recover = (
            "Lost the password? .venv/bin/python manage.py changepassword "
            f"{admin.get_username()}"
        )
    return f"Pagewatch is set up: sign in at {base}/ with your account.\n{recover}"
