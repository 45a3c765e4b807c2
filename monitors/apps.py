from django.apps import AppConfig


class MonitorsConfig(AppConfig):
    name = "monitors"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from config.middleware import stamp_sign_in

        # Where a session's limits start (config.middleware.SessionLimitsMiddleware),
        # written with the sign-in itself rather than by a later request.
        user_logged_in.connect(stamp_sign_in, dispatch_uid="stamp_sign_in")
