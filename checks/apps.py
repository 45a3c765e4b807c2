from django.apps import AppConfig


class ChecksConfig(AppConfig):
    name = "checks"

    def ready(self) -> None:
        # Whenever Django starts (web, manage.py, workers), the Celery app is
        # the current one, so the tasks the web queues go to its broker.
        import config.celery  # noqa: F401
