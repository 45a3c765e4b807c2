# The Celery app (config.celery) is loaded when Django starts (checks.apps),
# not here: `python -m config.run`, make run's process manager, imports this
# package and needs neither Django nor Celery. `celery -A config` finds
# config.celery by its name.
