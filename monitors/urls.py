"""Dashboard routes (HTML, signed-in people), the sign-in pages and the consent
pages linked from e-mails.

Everything here needs a session (LoginRequiredMiddleware) except Django's own
sign-in and password-reset views, the consent pages (monitors.email_views) and
the signed screenshot links (monitors.capture_views) and the Atom feeds at
their token links (monitors.feed_views), which mark themselves as public."""

from __future__ import annotations

from django.conf import settings
from django.urls import include, path
from django.utils.functional import lazy

from monitors import (
    capture_views,
    channel_views,
    email_views,
    feed_views,
    import_views,
    notification_views,
    password_views,
    search_views,
    views,
)

monitor = "monitors/<uuid:pk>/"
check = monitor + "checks/<uuid:check_id>/"
deliveries = monitor + "deliveries/"
consent = "email/unsubscribe/<str:token>/"
# Reset links start at PUBLIC_BASE_URL like every link in an e-mail, not at the
# host and scheme a request came in on (an internal address, or http behind a
# TLS proxy). Lazy: read when the e-mail is written.
public_base_url = lazy(lambda: settings.PUBLIC_BASE_URL, str)()

urlpatterns = [
    path("", views.monitor_list, name="monitor-list"),
    path("monitors/new/", views.monitor_create, name="monitor-create"),
    path("monitors/new/validate/", views.monitor_validate, name="monitor-validate-new"),
    path("monitors/target-row/", views.target_row, name="target-row"),
    path("monitors/schedule-preview/", views.schedule_preview, name="schedule-preview"),
    path(monitor, views.monitor_detail, name="monitor-detail"),
    path(monitor + "edit/", views.monitor_edit, name="monitor-edit"),
    path(monitor + "edit/validate/", views.monitor_validate, name="monitor-validate"),
    path(monitor + "toggle/", views.monitor_toggle, name="monitor-toggle"),
    path(monitor + "run/", views.monitor_run, name="monitor-run"),
    path(monitor + "delete/", views.monitor_delete, name="monitor-delete"),
    path(check, views.check_detail, name="check-detail"),
    path(monitor + "sites/<uuid:target_id>/", views.site_pages, name="site-pages"),
    path(monitor + "results/", search_views.monitor_results, name="monitor-results"),
    path(check + "progress/", views.check_progress, name="check-progress"),
    path(check + "pages/<uuid:page_id>/", views.page_diff, name="page-diff"),
    path(
        check + "pages/<uuid:page_id>/visual-change.png",
        capture_views.page_visual_change,
        name="page-visual-change",
    ),
    path(
        deliveries,
        notification_views.monitor_deliveries,
        name="monitor-deliveries",
    ),
    path(
        deliveries + "test/",
        notification_views.webhook_test,
        name="monitor-webhook-test",
    ),
    path(
        deliveries + "<int:delivery_id>/retry/",
        notification_views.delivery_retry,
        name="delivery-retry",
    ),
    path("history/", views.team_history, name="team-history"),
    path("import/", import_views.import_start, name="import-start"),
    path("import/<uuid:pk>/", import_views.import_run, name="import-run"),
    path(
        "import/<uuid:pk>/confirm/", import_views.import_confirm, name="import-confirm"
    ),
    path("export/", import_views.export, name="export"),
    path(
        monitor + "feed/renew/",
        feed_views.monitor_feed_renew,
        name="monitor-feed-renew",
    ),
    path(
        "settings/team/feed/renew/", feed_views.team_feed_renew, name="team-feed-renew"
    ),
    path(
        "settings/team/feeds/", feed_views.team_feeds_switch, name="team-feeds-switch"
    ),
    # Public: the token in the address is the credential (monitors.feed_views).
    path("feeds/monitors/<str:token>/", feed_views.monitor_feed, name="monitor-feed"),
    path("feeds/teams/<str:token>/", feed_views.team_feed, name="team-feed"),
    path("channels/", channel_views.channel_list, name="channels"),
    path("channels/new/", channel_views.channel_edit, name="channel-create"),
    path("channels/<int:pk>/", channel_views.channel_edit, name="channel-edit"),
    path("channels/<int:pk>/test/", channel_views.channel_test, name="channel-test"),
    path(
        "channels/<int:pk>/delete/", channel_views.channel_delete, name="channel-delete"
    ),
    path("settings/api-keys/", views.api_keys, name="api-keys"),
    path(
        "settings/api-keys/<int:key_id>/revoke/",
        views.api_key_revoke,
        name="api-key-revoke",
    ),
    path(
        "settings/team/webhook-secret/",
        notification_views.webhook_secret_show,
        name="webhook-secret-show",
    ),
    path(
        "settings/team/webhook-secret/rotate/",
        notification_views.webhook_secret_rotate,
        name="webhook-secret-rotate",
    ),
    path("team/switch/", views.team_switch, name="team-switch"),
    path("captures/<str:token>", capture_views.capture, name="capture"),
    path("email/confirm/<str:token>/", email_views.confirm, name="email_confirm"),
    path(consent, email_views.unsubscribe, name="email_unsubscribe"),
    path(
        consent + "one-click/",
        email_views.one_click_unsubscribe,
        name="email_unsubscribe_one_click",
    ),
    path(
        "accounts/password_reset/",
        password_views.PasswordResetView.as_view(
            extra_email_context={"base_url": public_base_url}
        ),
        name="password_reset",
    ),
    # login, logout, password_change*, password_reset* (templates/registration/)
    path("accounts/", include("django.contrib.auth.urls")),
]
