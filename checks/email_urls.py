"""Public /email/… pages (consent links in e-mails); no login required."""

from __future__ import annotations

from django.urls import path

from checks import email_views

urlpatterns = [
    path("confirm/<str:token>/", email_views.confirm, name="email_confirm"),
    path("unsubscribe/<str:token>/", email_views.unsubscribe, name="email_unsubscribe"),
    path(
        "unsubscribe/<str:token>/one-click/",
        email_views.one_click_unsubscribe,
        name="email_unsubscribe_one_click",
    ),
]
