"""Dashboard routes (HTML, signed-in people), the sign-in pages and the consent
pages linked from e-mails.

Everything here needs a session (LoginRequiredMiddleware) except Django's own
sign-in and password-reset views, the consent pages (monitors.dashboard.emails) and
the signed screenshot links (monitors.dashboard.captures) and the Atom feeds at
their token links (monitors.dashboard.feeds), which mark themselves as public."""

from __future__ import annotations

from django.urls import include, path
from django.utils.functional import lazy

from monitors.dashboard import (
    captures,
    channels,
    checks,
    emails,
    feeds,
    imports,
    keys,
    monitor_bulk,
    monitor_edit,
    monitors,
    muting,
    notifications,
    passwords,
    search,
)
from monitors.links import public_origin

monitor = "monitors/<uuid:pk>/"
check = monitor + "checks/<uuid:check_id>/"
deliveries = monitor + "deliveries/"
consent = "email/unsubscribe/<str:token>/"
# Reset links start at PUBLIC_BASE_URL like every link in an e-mail, not at the
# host and scheme a request came in on (an internal address, or http behind a
# TLS proxy). Lazy: read when the e-mail is written.
public_base_url = lazy(public_origin, str)()

urlpatterns = [
    path("", monitors.monitor_list, name="monitor-list"),
    path("monitors/new/", monitor_edit.monitor_create, name="monitor-create"),
    path(
        "monitors/new/validate/",
        monitor_edit.monitor_validate,
        name="monitor-validate-new",
    ),
    path("monitors/target-row/", monitor_edit.target_row, name="target-row"),
    path(
        "monitors/schedule-preview/",
        monitor_edit.schedule_preview,
        name="schedule-preview",
    ),
    path(monitor, monitors.monitor_detail, name="monitor-detail"),
    path(monitor + "edit/", monitor_edit.monitor_edit, name="monitor-edit"),
    path(
        monitor + "edit/validate/",
        monitor_edit.monitor_validate,
        name="monitor-validate",
    ),
    path(monitor + "toggle/", monitors.monitor_toggle, name="monitor-toggle"),
    path(monitor + "mute/", muting.monitor_mute, name="monitor-mute"),
    path("monitors/bulk/", monitor_bulk.monitor_bulk, name="monitor-bulk"),
    path(monitor + "run/", monitors.monitor_run, name="monitor-run"),
    path(
        monitor + "ignore-lines/",
        monitors.monitor_ignore_lines,
        name="monitor-ignore-lines",
    ),
    path(monitor + "delete/", monitors.monitor_delete, name="monitor-delete"),
    path(check, checks.check_detail, name="check-detail"),
    path(monitor + "sites/<uuid:target_id>/", checks.site_pages, name="site-pages"),
    path(monitor + "results/", search.monitor_results, name="monitor-results"),
    path(check + "progress/", monitors.check_progress, name="check-progress"),
    path(check + "pages/<uuid:page_id>/", checks.page_diff, name="page-diff"),
    path(
        check + "pages/<uuid:page_id>/visual-change.png",
        captures.page_visual_change,
        name="page-visual-change",
    ),
    path(
        deliveries,
        notifications.monitor_deliveries,
        name="monitor-deliveries",
    ),
    path(
        deliveries + "test/",
        notifications.webhook_test,
        name="monitor-webhook-test",
    ),
    path(
        deliveries + "<int:delivery_id>/retry/",
        notifications.delivery_retry,
        name="delivery-retry",
    ),
    path("history/", monitors.team_history, name="team-history"),
    path("import/", imports.import_start, name="import-start"),
    path("import/<uuid:pk>/", imports.import_run, name="import-run"),
    path("import/<uuid:pk>/confirm/", imports.import_confirm, name="import-confirm"),
    path("export/", imports.export, name="export"),
    path(
        monitor + "feed/renew/",
        feeds.monitor_feed_renew,
        name="monitor-feed-renew",
    ),
    path("settings/team/feed/renew/", feeds.team_feed_renew, name="team-feed-renew"),
    path("settings/team/feeds/", feeds.team_feeds_switch, name="team-feeds-switch"),
    # Public: the token in the address is the credential (monitors.dashboard.feeds).
    path("feeds/monitors/<str:token>/", feeds.monitor_feed, name="monitor-feed"),
    path("feeds/teams/<str:token>/", feeds.team_feed, name="team-feed"),
    path("channels/", channels.channel_list, name="channels"),
    path("channels/new/", channels.channel_edit, name="channel-create"),
    path("channels/<int:pk>/", channels.channel_edit, name="channel-edit"),
    path("channels/<int:pk>/test/", channels.channel_test, name="channel-test"),
    path("channels/<int:pk>/delete/", channels.channel_delete, name="channel-delete"),
    path("settings/api-keys/", keys.api_keys, name="api-keys"),
    path(
        "settings/api-keys/<int:key_id>/revoke/",
        keys.api_key_revoke,
        name="api-key-revoke",
    ),
    path(
        "settings/team/webhook-secret/",
        notifications.webhook_secret_show,
        name="webhook-secret-show",
    ),
    path(
        "settings/team/webhook-secret/rotate/",
        notifications.webhook_secret_rotate,
        name="webhook-secret-rotate",
    ),
    path("team/switch/", monitors.team_switch, name="team-switch"),
    path("captures/<str:token>", captures.capture, name="capture"),
    path("email/confirm/<str:token>/", emails.confirm, name="email_confirm"),
    path(consent, emails.unsubscribe, name="email_unsubscribe"),
    path(
        consent + "one-click/",
        emails.one_click_unsubscribe,
        name="email_unsubscribe_one_click",
    ),
    path(
        "email/channel/<str:token>/",
        emails.channel_unsubscribe,
        name="email_channel_unsubscribe",
    ),
    path(
        "email/channel/<str:token>/one-click/",
        emails.channel_one_click_unsubscribe,
        name="email_channel_unsubscribe_one_click",
    ),
    path(
        "accounts/password_reset/",
        passwords.PasswordResetView.as_view(
            extra_email_context={"base_url": public_base_url}
        ),
        name="password_reset",
    ),
    path(
        "accounts/password_change/",
        passwords.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/reset/<uidb64>/<token>/",
        passwords.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    # login, logout, password_change*, password_reset* (templates/registration/)
    path("accounts/", include("django.contrib.auth.urls")),
]
