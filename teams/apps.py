from __future__ import annotations

from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    verbose_name = "Teams: invitations and activity"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model, signals
        from django.db.models.signals import pre_delete

        from config import signin
        from teams import members, signins

        pre_delete.connect(
            members.account_deleted,
            sender=get_user_model(),
            dispatch_uid="pw-account-deleted",
        )

        signals.user_logged_in.connect(signins.signed_in, dispatch_uid="pw-signin")
        signals.user_login_failed.connect(
            signins.sign_in_failed, dispatch_uid="pw-signin-failed"
        )
        signals.user_login_failed.connect(
            signin.address_failed, dispatch_uid="pw-signin-failed-address"
        )
