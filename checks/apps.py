from django.apps import AppConfig


class ChecksConfig(AppConfig):
    name = "checks"

    def ready(self) -> None:
        # The target kinds register themselves with monitors.target_kinds,
        # which the models, the API and the dashboard ask. And whenever
        # Django starts (web, manage.py, workers), the Celery app is the
        # current one, so the tasks the web queues go to its broker.
        import checks.targets  # noqa: F401
        import config.celery  # noqa: F401
        from config.mail import require_backend

        require_backend()
