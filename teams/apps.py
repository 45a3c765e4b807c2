from __future__ import annotations

from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    verbose_name = "Teams: invitations and activity"

    def ready(self) -> None:
        from django.contrib.auth import signals

        from teams import signins

        signals.user_logged_in.connect(signins.signed_in, dispatch_uid="pw-signin")
        signals.user_login_failed.connect(
            signins.sign_in_failed, dispatch_uid="pw-signin-failed"
        )
