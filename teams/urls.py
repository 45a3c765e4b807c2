from __future__ import annotations

from django.urls import path

from teams import second_factor_views, signin_views, views

urlpatterns = [
    path("accounts/login/", signin_views.sign_in, name="login"),
    path("accounts/sso/", signin_views.sso_start, name="oidc_authentication_init"),
    path(
        "accounts/sso/callback/",
        signin_views.sso_callback,
        name="oidc_authentication_callback",
    ),
    path("settings/team/", views.team_members, name="team-members"),
    path("settings/team/invite/", views.team_invite, name="team-invite"),
    path("settings/team/activity/", views.team_retention, name="team-retention"),
    path("settings/team/time-zone/", views.team_time_zone, name="team-time-zone"),
    path(
        "settings/team/invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation-revoke",
    ),
    path(
        "settings/team/invitations/<int:invitation_id>/renew/",
        views.invitation_renew,
        name="invitation-renew",
    ),
    path(
        "settings/team/members/<int:membership_id>/role/",
        views.member_role,
        name="member-role",
    ),
    path(
        "settings/team/members/<int:membership_id>/remove/",
        views.member_remove,
        name="member-remove",
    ),
    path("activity/", views.team_activity, name="team-activity"),
    path("accounts/two-factor/", second_factor_views.overview, name="two-factor"),
    path(
        "accounts/two-factor/setup/",
        second_factor_views.setup,
        name="two-factor-setup",
    ),
    path(
        "accounts/two-factor/verify/",
        second_factor_views.verify,
        name="two-factor-verify",
    ),
    path(
        "accounts/two-factor/off/",
        second_factor_views.turn_off,
        name="two-factor-off",
    ),
    path(
        "settings/team/second-factor/",
        views.team_second_factor,
        name="team-second-factor",
    ),
    path("invitations/<str:token>/", views.invitation_accept, name="invitation-accept"),
]
