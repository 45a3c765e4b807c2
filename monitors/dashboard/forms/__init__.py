"""The dashboard's forms: the monitor form (monitor.py) with its fields
(fields.py), target rows (targets.py) and plain words for every rule
(words.py); the team's small forms (settings.py)."""
