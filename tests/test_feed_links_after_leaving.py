"""Feed links a former member may have copied: an owner removing someone is
offered to make the team's feed links new at the same time, and someone
leaving on their own (or removed in the admin, where nobody asks) leaves the
owners a notice on the Team page with the button that does it."""

from __future__ import annotations

import html

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models.signals import post_delete
from django.urls import reverse

from monitors.dashboard import feeds
from monitors.models import ApiKey, Membership, Monitor, Team
from teams import members
from teams.activity import SYSTEM
from teams.models import Activity
from tests.test_feeds import make_monitor
from tests.test_leaving_members import PASSWORD, admin_team_form

pytestmark = pytest.mark.django_db

OFFER = (
    "eddie may have copied the team's feed links. Renew them now? "
    "Everyone else will need the new links."
)
NOTICE = "eddie left the team after the feed links were last made new"


def text_of(response) -> str:
    return html.unescape(response.content.decode())


def tokens(team: Team) -> dict[str, str]:
    """Every feed token of `team`: its own and each of its monitors'."""
    team.refresh_from_db()
    found = {"team": team.feed_token}
    for monitor in Monitor.objects.filter(team=team):
        found[str(monitor.pk)] = monitor.feed_token
    return found


@pytest.fixture
def people(team, django_user_model):
    owner = django_user_model.objects.create_user("olive", "o@acme.test", PASSWORD)
    editor = django_user_model.objects.create_user("eddie", "e@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    leaving = Membership.objects.create(
        team=team, user=editor, role=Membership.Role.EDITOR
    )
    return owner, editor, leaving


@pytest.fixture
def monitors(team, other_team):
    return [
        make_monitor(team, name="Pricing"),
        make_monitor(team, name="Jobs"),
        make_monitor(other_team, name="Theirs"),
    ]


def test_removing_a_member_offers_to_renew_the_feed_links_ticked_while_feeds_are_on(
    client, team, people
):
    owner, _, leaving = people
    client.force_login(owner)

    page = text_of(client.get(reverse("member-remove", args=[leaving.pk])))

    assert OFFER in page
    assert 'name="renew_feeds" value="yes" checked' in page


def test_with_feeds_off_the_renewal_is_offered_unticked(client, team, people):
    owner, _, leaving = people
    team.set_feeds_enabled(False)
    client.force_login(owner)

    page = text_of(client.get(reverse("member-remove", args=[leaving.pk])))

    assert OFFER in page
    assert 'name="renew_feeds" value="yes">' in page
    assert 'value="yes" checked' not in page


def test_someone_leaving_is_not_offered_to_renew_the_links(client, team, people):
    _, editor, leaving = people
    client.force_login(editor)

    page = text_of(client.get(reverse("member-remove", args=[leaving.pk])))

    assert "renew_feeds" not in page and "feed links" not in page


def test_removing_with_the_box_ticked_renews_every_feed_link_of_the_team_and_logs_it(
    client, team, other_team, people, monitors
):
    owner, _, leaving = people
    before, elsewhere = tokens(team), tokens(other_team)
    client.force_login(owner)

    response = client.post(
        reverse("member-remove", args=[leaving.pk]), {"renew_feeds": "yes"}, follow=True
    )

    assert not Membership.objects.filter(pk=leaving.pk).exists()
    after = tokens(team)
    assert after.keys() == before.keys() and len(after) == 3
    assert all(after[name] != before[name] for name in before)
    assert tokens(other_team) == elsewhere
    assert "The team's feed links are new" in text_of(response)
    entry = Activity.objects.get(team=team, kind=Activity.Kind.FEED_RENEWED)
    assert entry.user == owner and entry.monitor is None
    assert entry.what_words == (
        "Replaced the team's feed link and those of its 2 monitors"
    )
    # Once for all of them, as the Team page's button: no notice left.
    assert NOTICE not in text_of(client.get(reverse("team-members")))


def test_removing_with_the_box_unticked_keeps_every_feed_link(
    client, team, people, monitors
):
    owner, _, leaving = people
    before = tokens(team)
    client.force_login(owner)

    response = client.post(reverse("member-remove", args=[leaving.pk]), follow=True)

    assert not Membership.objects.filter(pk=leaving.pk).exists()
    assert tokens(team) == before
    assert not Activity.objects.filter(kind=Activity.Kind.FEED_RENEWED).exists()
    # The owner was asked and said no: the Team page does not ask again.
    assert NOTICE not in text_of(response)
    assert "eddie was removed from the team" in text_of(response)


def test_someone_leaving_on_their_own_leaves_the_owners_a_notice_to_renew(
    client, team, people, monitors
):
    owner, editor, leaving = people
    client.force_login(editor)
    client.post(reverse("member-remove", args=[leaving.pk]))
    before = tokens(team)
    client.force_login(owner)

    page = text_of(client.get(reverse("team-members")))

    assert NOTICE in page and "Renew feed links" in page
    assert tokens(team) == before  # leaving renewed nothing by itself

    response = client.post(reverse("team-feed-renew"), {"links": "all"}, follow=True)

    after = tokens(team)
    assert all(after[name] != before[name] for name in before)
    entry = Activity.objects.get(team=team, kind=Activity.Kind.FEED_RENEWED)
    assert entry.what_words == (
        "Replaced the team's feed link and those of its 2 monitors"
    )
    assert NOTICE not in text_of(response)


def test_the_team_links_button_alone_does_not_clear_the_notice(
    client, team, people, monitors
):
    owner, editor, leaving = people
    client.force_login(editor)
    client.post(reverse("member-remove", args=[leaving.pk]))
    client.force_login(owner)

    response = client.post(reverse("team-feed-renew"), follow=True)

    # The monitors' links they may have copied still work.
    assert NOTICE in text_of(response)


def test_the_notice_is_for_owners_only(client, team, people, django_user_model):
    _, editor, leaving = people
    viewer = django_user_model.objects.create_user("vic", "v@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=viewer, role=Membership.Role.VIEWER)
    client.force_login(editor)
    client.post(reverse("member-remove", args=[leaving.pk]))
    client.force_login(viewer)

    assert NOTICE not in text_of(client.get(reverse("team-members")))
    client.post(reverse("team-feed-renew"), {"links": "all"})
    assert not Activity.objects.filter(kind=Activity.Kind.FEED_RENEWED).exists()


def test_someone_removed_in_the_admin_leaves_the_owners_the_notice_too(
    admin_client, client, team, people
):
    owner, editor, leaving = people
    key, _ = ApiKey.issue(team, name="eddie's", created_by=editor)

    admin_client.post(
        reverse("admin:monitors_team_change", args=[team.pk]),
        admin_team_form(team, key, deleting=leaving),
    )
    assert not Membership.objects.filter(pk=leaving.pk).exists()
    client.force_login(owner)

    page = text_of(client.get(reverse("team-members")))

    removed = "eddie was removed from the team after the feed links were last made new"
    assert removed in page


def test_the_admin_says_so_when_removing_and_renews_with_its_action(
    admin_client, client, team, other_team, people, monitors
):
    owner, editor, leaving = people
    key, _ = ApiKey.issue(team, name="eddie's", created_by=editor)
    response = admin_client.post(
        reverse("admin:monitors_team_change", args=[team.pk]),
        admin_team_form(team, key, deleting=leaving),
        follow=True,
    )
    assert "If eddie copied the team's feed links, they still work." in text_of(
        response
    )
    before, elsewhere = tokens(team), tokens(other_team)

    admin_client.post(
        reverse("admin:monitors_team_changelist"),
        {"action": "renew_team_feed_links", "_selected_action": [team.pk]},
    )

    after = tokens(team)
    assert all(after[name] != before[name] for name in before)
    assert tokens(other_team) == elsewhere
    entry = Activity.objects.get(team=team, kind=Activity.Kind.FEED_RENEWED)
    assert entry.what_words == (
        "Replaced the team's feed link and those of its 2 monitors"
    )
    client.force_login(owner)
    assert "after the feed links were last made new" not in text_of(
        client.get(reverse("team-members"))
    )


def test_renewing_the_feed_links_that_fails_part_way_leaves_every_link_as_it_was(
    team, monitors, monkeypatch
):
    before = tokens(team)

    def refused(*_: object, **__: object) -> None:
        raise RuntimeError("the activity log could not be written")

    monkeypatch.setattr(members, "record", refused)

    with pytest.raises(RuntimeError):
        members.renew_feed_links(SYSTEM, team)

    assert tokens(team) == before
    assert not Activity.objects.filter(team=team).exists()


@pytest.mark.parametrize("which", ["team", "monitor"])
def test_a_feed_link_whose_renewal_cannot_be_logged_stays_as_it_was(
    client, team, people, monitors, monkeypatch, which
):
    owner, _, _ = people
    client.force_login(owner)
    before = tokens(team)

    def refused(*_: object, **__: object) -> None:
        raise RuntimeError("the activity log could not be written")

    monkeypatch.setattr(feeds, "record", refused)
    url = (
        reverse("team-feed-renew")
        if which == "team"
        else reverse("monitor-feed-renew", args=[monitors[0].pk])
    )
    with pytest.raises(RuntimeError):
        client.post(url)

    assert tokens(team) == before


DELETE_EDDIE = (
    "from django.contrib.auth import get_user_model; "
    "get_user_model().objects.get(username='eddie').delete()"
)
DELETED_NOTICE = "eddie's account was deleted after the feed links were last made new"


def test_an_account_deleted_outside_the_admin_is_removed_in_each_of_its_teams_logs(
    client, team, other_team, people, monitors
):
    owner, editor, _ = people
    Membership.objects.create(team=other_team, user=owner, role=Membership.Role.OWNER)
    Membership.objects.create(team=other_team, user=editor, role=Membership.Role.VIEWER)

    call_command("shell", command=DELETE_EDDIE)

    removed = Activity.objects.filter(kind=Activity.Kind.MEMBER_REMOVED)
    assert sorted(
        removed.values_list("team_id", "via", "details__member", "user_id")
    ) == sorted([(team.pk, "system", "eddie", None),
                 (other_team.pk, "system", "eddie", None)])  # fmt: skip
    assert {entry.what_words for entry in removed} == {
        "Removed eddie from the team: their account was deleted"
    }
    client.force_login(owner)
    page = text_of(client.get(reverse("team-members")))
    assert DELETED_NOTICE in page and "Renew feed links" in page


def test_an_account_deleted_in_the_admin_names_the_administrator_once_per_team(
    admin_client, admin_user, client, team, people
):
    owner, editor, _ = people
    User = get_user_model()

    admin_client.post(
        reverse("admin:auth_user_delete", args=[editor.pk]), {"post": "yes"}
    )

    assert not User.objects.filter(pk=editor.pk).exists()
    removed = Activity.objects.get(team=team, kind=Activity.Kind.MEMBER_REMOVED)
    assert (removed.via, removed.user_id) == ("admin", admin_user.pk)
    assert removed.actor_words == "admin (administration)"
    client.force_login(owner)
    assert DELETED_NOTICE in text_of(client.get(reverse("team-members")))


@pytest.mark.django_db(transaction=True)
def test_a_deletion_that_fails_leaves_no_removal_in_the_log(team, people):
    _, editor, _ = people

    def refused(**_: object) -> None:
        raise RuntimeError("the deletion failed after the log was written")

    post_delete.connect(refused, sender=get_user_model(), weak=False)
    try:
        with pytest.raises(RuntimeError):
            editor.delete()
    finally:
        post_delete.disconnect(refused, sender=get_user_model())

    assert Membership.objects.filter(user=editor).exists()
    assert not Activity.objects.filter(kind=Activity.Kind.MEMBER_REMOVED).exists()
