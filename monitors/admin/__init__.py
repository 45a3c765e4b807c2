"""Admin for teams, API keys, monitors and channels: an operator's view of the
tenancy and scheduling state. Django's autodiscover imports this package, so it
imports the modules that register their models.

A monitor is edited here with the dashboard's own form (monitors.dashboard.forms),
so the same rules refuse the same input with the same words (schedules, time
zones, URLs, goal rules, limits), and it is saved by the same workflow
(monitors.editing) with an entry in the team's activity log. Pause/Resume
actions call the model. People's accounts keep Django's pages (users), but
deleting one follows the Team page's rules.

Everything that may have come from a user or a page is rendered through
format_html / format_html_join so it is escaped; nothing here uses mark_safe.
"""

from axes.models import AccessFailureLog, AccessLog
from django.contrib import admin

from monitors.admin import channels, keys, monitors, teams, users

admin.site.site_header = "Pagewatch administration"
admin.site.site_title = "Pagewatch admin"
admin.site.index_title = "Pagewatch"
# The sign-in throttle (django-axes) keeps neither log (config.settings): only
# its access attempts, where an administrator lifts a lockout, are listed.
admin.site.unregister([AccessLog, AccessFailureLog])

__all__ = ["channels", "keys", "monitors", "teams", "users"]
