"""A person who leaves a team takes no way in with them: the API keys they
made for it stop working, whether they were removed on the Team page, in the
admin, or their account was switched off or deleted."""

from __future__ import annotations

import html
import re

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils.html import strip_tags
from rest_framework.test import APIClient

from monitors.models import ApiKey, Membership, Team
from teams.models import Activity

PASSWORD = "a long enough password 42"


def answers(raw: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client.get("/v2/monitor").status_code


@pytest.fixture
def people(team, django_user_model):
    owner = django_user_model.objects.create_user("olive", "o@acme.test", PASSWORD)
    editor = django_user_model.objects.create_user("eddie", "e@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    leaving = Membership.objects.create(
        team=team, user=editor, role=Membership.Role.EDITOR
    )
    return owner, editor, leaving


def test_removing_a_member_revokes_the_keys_they_made_for_this_team_only(
    client, team, people
):
    owner, editor, leaving = people
    elsewhere = Team.objects.create(name="Elsewhere", slug="elsewhere")
    Membership.objects.create(team=elsewhere, user=editor, role=Membership.Role.OWNER)
    _, theirs = ApiKey.issue(team, name="eddie's laptop", created_by=editor)
    _, also_theirs = ApiKey.issue(team, name="eddie's CI", created_by=editor)
    _, owners = ApiKey.issue(team, name="olive's", created_by=owner)
    _, other_team = ApiKey.issue(elsewhere, name="eddie elsewhere", created_by=editor)
    assert answers(theirs) == 200
    client.force_login(owner)

    page = html.unescape(client.get(reverse("team-members")).content.decode())
    assert "The 2 API keys they made stop working then." in page

    response = client.post(reverse("member-remove", args=[leaving.pk]), follow=True)

    said = html.unescape(response.content.decode())
    assert (
        "eddie was removed from the team. The 2 API keys they made no longer work."
        in said
    )
    assert answers(theirs) == 401
    assert answers(also_theirs) == 401
    assert answers(owners) == 200
    assert answers(other_team) == 200
    entry = Activity.objects.get(team=team, kind=Activity.Kind.MEMBER_REMOVED)
    assert entry.what_words == (
        "Removed eddie from the team and revoked the 2 API keys they made"
    )


def test_a_removal_that_fails_part_way_leaves_the_member_in_with_their_keys(
    client, team, people, monkeypatch
):
    owner, editor, leaving = people
    _, theirs = ApiKey.issue(team, name="eddie's laptop", created_by=editor)
    client.force_login(owner)

    def broken(*args, **kwargs):
        raise RuntimeError("the log could not be written")

    # The last of the steps after the removal: the keys are revoked by then.
    monkeypatch.setattr("teams.members.record", broken)
    with pytest.raises(RuntimeError):
        client.post(reverse("member-remove", args=[leaving.pk]))

    assert Membership.objects.filter(pk=leaving.pk).exists()
    assert answers(theirs) == 200
    assert not Activity.objects.filter(kind=Activity.Kind.MEMBER_REMOVED).exists()


def test_a_member_without_keys_leaves_with_the_plain_words(client, team, people):
    owner, _, leaving = people
    client.force_login(owner)

    response = client.post(reverse("member-remove", args=[leaving.pk]), follow=True)

    said = html.unescape(response.content.decode())
    assert "eddie was removed from the team." in said
    assert "eddie left" not in said and "no longer work" not in said
    entry = Activity.objects.get(team=team, kind=Activity.Kind.MEMBER_REMOVED)
    assert entry.what_words == "Removed eddie from the team"


def test_the_last_owner_is_not_told_what_leaving_would_revoke(client, team, people):
    owner, editor, eddie = people
    olive = Membership.objects.get(team=team, user=owner)
    ApiKey.issue(team, name="olive's", created_by=owner)
    ApiKey.issue(team, name="eddie's", created_by=editor)
    client.force_login(owner)

    page = html.unescape(client.get(reverse("team-members")).content.decode())

    # The last owner cannot leave: no words about what leaving would do.
    assert "The API key you made stops working then." not in page
    assert f'aria-describedby="keys-{olive.pk}"' not in page
    assert "The API key they made stops working then." in page
    assert f'aria-describedby="keys-{eddie.pk}"' in page

    eddie.change_role(Membership.Role.OWNER)
    page = html.unescape(client.get(reverse("team-members")).content.decode())

    # With a second owner either may leave, and each is told.
    assert "The API key you made stops working then." in page
    assert "The API key they made stops working then." in page


def admin_team_form(
    team, key, deleting: Membership | None = None, viewer: Membership | None = None
) -> dict[str, str]:
    """The admin's team page as posted, with its members and `key`: one
    member deleted or made a viewer, the rest as they are."""
    members = list(Membership.objects.filter(team=team).order_by("pk"))
    data = {"name": team.name, "slug": team.slug, "credit_allowance": "",
            "membership_set-TOTAL_FORMS": str(len(members)),
            "membership_set-INITIAL_FORMS": str(len(members)),
            "membership_set-MIN_NUM_FORMS": "0", "membership_set-MAX_NUM_FORMS": "1000",
            "api_keys-TOTAL_FORMS": "1", "api_keys-INITIAL_FORMS": "1",
            "api_keys-MIN_NUM_FORMS": "0", "api_keys-MAX_NUM_FORMS": "1000",
            "api_keys-0-id": str(key.pk), "api_keys-0-team": str(team.pk)}  # fmt: skip
    for n, m in enumerate(members):
        data |= {
            f"membership_set-{n}-id": str(m.pk),
            f"membership_set-{n}-team": str(team.pk),
            f"membership_set-{n}-user": str(m.user_id),
            f"membership_set-{n}-role": "viewer" if m == viewer else m.role,
        }
        if m == deleting:
            data[f"membership_set-{n}-DELETE"] = "on"
    return data


def test_removing_a_member_in_the_admin_revokes_their_keys_too(
    admin_client, team, people
):
    owner, editor, leaving = people
    key, raw = ApiKey.issue(team, name="eddie's", created_by=editor)
    data = admin_team_form(team, key, deleting=leaving)

    response = admin_client.post(
        reverse("admin:monitors_team_change", args=[team.pk]), data
    )

    assert response.status_code == 302
    assert not Membership.objects.filter(pk=leaving.pk).exists()
    assert answers(raw) == 401
    entry = Activity.objects.get(team=team, kind=Activity.Kind.MEMBER_REMOVED)
    assert entry.details["keys_revoked"] == 1


def test_a_switched_off_account_switches_off_its_keys(team, people):
    _, editor, _ = people
    _, raw = ApiKey.issue(team, name="eddie's", created_by=editor)
    editor.is_active = False
    editor.save()

    assert answers(raw) == 401

    editor.is_active = True
    editor.save()
    assert answers(raw) == 200


def test_a_deleted_account_leaves_its_keys_revoked_and_says_so(team, people):
    _, editor, _ = people
    key, raw = ApiKey.issue(team, name="eddie's", created_by=editor)

    editor.delete()

    key.refresh_from_db()
    assert key.revoked_at is not None
    assert key.created_by is None
    assert answers(raw) == 401
    entry = Activity.objects.get(team=team, kind=Activity.Kind.KEY_REVOKED)
    assert entry.what_words == (
        "Revoked the API key “eddie's” made by eddie, whose account was deleted"
    )


def test_the_last_owner_is_offered_no_leave_button_but_told_how_to_leave(
    client, team, people
):
    owner, _, eddie = people
    olive = Membership.objects.get(team=team, user=owner)
    client.force_login(owner)

    page = html.unescape(client.get(reverse("team-members")).content.decode())

    assert reverse("member-remove", args=[olive.pk]) not in page
    assert "Leave the team" not in page
    assert "To leave, first make someone else an owner." in page
    assert reverse("member-remove", args=[eddie.pk]) in page

    eddie.change_role(Membership.Role.OWNER)
    page = html.unescape(client.get(reverse("team-members")).content.decode())

    assert reverse("member-remove", args=[olive.pk]) in page
    assert "Leave the team" in page


def test_remove_on_the_team_page_asks_first_and_removes_nobody_until_confirmed(
    client, team, people
):
    owner, editor, eddie = people
    _, theirs = ApiKey.issue(team, name="eddie's laptop", created_by=editor)
    client.force_login(owner)
    remove_url = reverse("member-remove", args=[eddie.pk])

    page = html.unescape(client.get(reverse("team-members")).content.decode())

    # The Team page links to a question; it holds no form that removes at once.
    assert f'href="{remove_url}"' in page
    assert f'action="{remove_url}"' not in page

    asked = client.get(remove_url)

    question = html.unescape(asked.content.decode())
    assert asked.status_code == 200
    assert "Remove eddie from the team?" in question
    assert "The API key they made stops working" in question
    assert f'action="{remove_url}"' in question
    assert Membership.objects.filter(pk=eddie.pk).exists()
    assert answers(theirs) == 200
    assert not Activity.objects.filter(kind=Activity.Kind.MEMBER_REMOVED).exists()

    client.post(remove_url)

    assert not Membership.objects.filter(pk=eddie.pk).exists()
    assert answers(theirs) == 401


def test_asking_to_remove_the_last_owner_says_why_not_and_removes_nobody(
    client, team, people
):
    owner, _, _ = people
    olive = Membership.objects.get(team=team, user=owner)
    client.force_login(owner)

    response = client.get(reverse("member-remove", args=[olive.pk]), follow=True)

    said = html.unescape(response.content.decode())
    assert response.redirect_chain == [(reverse("team-members"), 302)]
    assert "make someone else an owner first." in said
    assert Membership.objects.filter(pk=olive.pk).exists()


@pytest.mark.parametrize("role", [Membership.Role.EDITOR, Membership.Role.VIEWER])
def test_an_editor_or_a_viewer_may_leave_the_team_themselves(
    client, team, people, django_user_model, role
):
    person = django_user_model.objects.create_user("vera", "v@acme.test", PASSWORD)
    mine = Membership.objects.create(team=team, user=person, role=role)
    _, key = ApiKey.issue(team, name="vera's", created_by=person)
    client.force_login(person)

    page = html.unescape(client.get(reverse("team-members")).content.decode())
    leave = reverse("member-remove", args=[mine.pk])
    assert f'href="{leave}"' in page and "Leave the team" in page
    asked = html.unescape(client.get(leave).content.decode())
    assert "Leave Acme?" in asked

    response = client.post(leave, follow=True)

    assert not Membership.objects.filter(pk=mine.pk).exists()
    left = html.unescape(response.content.decode())
    assert "You left Acme." in left
    # Owners invite people now; an administrator is not the only way back.
    assert "Ask an owner of your team to invite you" in left
    assert answers(key) == 401
    entry = Activity.objects.get(team=team, kind=Activity.Kind.MEMBER_REMOVED)
    assert entry.user == person
    assert entry.what_words == "Left the team; the API key they made was revoked"


@pytest.mark.parametrize("role", [Membership.Role.EDITOR, Membership.Role.VIEWER])
def test_an_editor_or_a_viewer_cannot_remove_anyone_else(
    client, team, people, django_user_model, role
):
    owner, _, eddie = people
    person = django_user_model.objects.create_user("vera", "v@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=person, role=role)
    client.force_login(person)

    response = client.post(reverse("member-remove", args=[eddie.pk]))

    assert response.status_code == 403
    assert "Nothing was changed." in html.unescape(response.content.decode())
    assert Membership.objects.filter(pk=eddie.pk).exists()
    assert not Activity.objects.filter(kind=Activity.Kind.MEMBER_REMOVED).exists()


def test_a_member_made_a_viewer_keeps_no_write_key_they_made(client, team, people):
    owner, editor, eddie = people
    _, writes = ApiKey.issue(team, name="eddie's CI", created_by=editor)
    _, reads = ApiKey.issue(team, name="eddie's reports", created_by=editor,
                            scope=ApiKey.Scope.READ)  # fmt: skip
    _, owners = ApiKey.issue(team, name="olive's", created_by=owner)
    client.force_login(owner)

    response = client.post(
        reverse("member-role", args=[eddie.pk]),
        {"role": "viewer", "confirmed": "yes"},
        follow=True,
    )

    said = html.unescape(response.content.decode())
    assert (
        "eddie is now a viewer. The API key they made that can change monitors "
        "no longer works."
    ) in said
    assert answers(writes) == 401
    assert answers(reads) == 200 and answers(owners) == 200
    entry = Activity.objects.get(team=team, kind=Activity.Kind.ROLE_CHANGED)
    assert entry.what_words == (
        "Made eddie a viewer (was an editor) and revoked the API key they made "
        "that can change monitors"
    )


def test_the_question_the_message_and_the_log_name_the_keys_a_viewer_loses_alike(
    client, team, people
):
    """Asked "that can change monitors", the owner is not told afterwards of
    keys "that could change things": the same keys, the same words."""
    owner, editor, eddie = people
    ApiKey.issue(team, name="eddie's CI", created_by=editor)
    ApiKey.issue(team, name="eddie's deploys", created_by=editor)
    client.force_login(owner)
    keys = "the 2 API keys they made that can change monitors"

    asked = html.unescape(
        client.post(
            reverse("member-role", args=[eddie.pk]), {"role": "viewer"}
        ).content.decode()
    )
    done = client.post(
        reverse("member-role", args=[eddie.pk]),
        {"role": "viewer", "confirmed": "yes"},
        follow=True,
    )

    assert "The 2 API keys eddie made that can change monitors stop working" in asked
    said = html.unescape(done.content.decode())
    assert f"eddie is now a viewer. {keys[:1].upper()}{keys[1:]} no longer work." in (
        said
    )
    entry = Activity.objects.get(team=team, kind=Activity.Kind.ROLE_CHANGED)
    assert entry.what_words.endswith(f"and revoked {keys}")


def test_the_team_page_says_before_a_change_which_keys_making_a_viewer_turns_off(
    client, team, people, django_user_model
):
    owner, editor, eddie = people
    editor.first_name, editor.last_name = "Eddie", "Berg"
    editor.save()
    _, writes = ApiKey.issue(team, name="eddie's CI", created_by=editor)
    ApiKey.issue(team, name="eddie's deploys", created_by=editor)
    ApiKey.issue(team, name="eddie's reports", created_by=editor,
                 scope=ApiKey.Scope.READ)  # fmt: skip
    ApiKey.issue(team, name="eddie's old", created_by=editor)[0].revoke()
    ApiKey.issue(team, name="olive's", created_by=owner)
    viewer = django_user_model.objects.create_user("vera", "v@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=viewer, role=Membership.Role.VIEWER)
    ApiKey.issue(team, name="vera's", created_by=viewer)
    client.force_login(owner)

    page = html.unescape(client.get(reverse("team-members")).content.decode())

    assert (
        "Making Eddie Berg a viewer also turns off the 2 API keys Eddie Berg "
        "made that can change monitors."
    ) in page
    # Said beside the role form it is about, for screen readers too.
    assert f'aria-describedby="role-keys-{eddie.pk}"' in page
    assert page.count("a viewer also turns off") == 1  # not olive, the last owner
    assert answers(writes) == 200  # only said, nothing turned off yet


def test_making_someone_a_viewer_asks_first_when_it_turns_their_keys_off(
    client, team, people
):
    owner, editor, eddie = people
    editor.first_name, editor.last_name = "Eddie", "Berg"
    editor.save()
    _, writes = ApiKey.issue(team, name="eddie's CI", created_by=editor)
    ApiKey.issue(team, name="eddie's deploys", created_by=editor)
    client.force_login(owner)

    asked = client.post(reverse("member-role", args=[eddie.pk]), {"role": "viewer"})

    page = html.unescape(asked.content.decode())
    assert asked.status_code == 200
    assert "Make Eddie Berg a viewer?" in page
    assert (
        "The 2 API keys Eddie Berg made that can change monitors stop working at "
        "once: programs using them will need a new key."
    ) in page
    assert "Keep them as an editor" in page
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.EDITOR  # nothing done yet
    assert answers(writes) == 200
    assert not Activity.objects.filter(kind=Activity.Kind.ROLE_CHANGED).exists()

    # The page's own button says yes.
    [confirm] = re.findall(r'<form method="post" action="([^"]+/role/)"', page)
    assert 'name="confirmed" value="yes"' in page
    done = client.post(confirm, {"role": "viewer", "confirmed": "yes"}, follow=True)

    assert "eddie is now a viewer." in html.unescape(done.content.decode())
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.VIEWER
    assert answers(writes) == 401


def test_from_the_team_pages_htmx_form_the_question_comes_in_the_members_row(
    client, team, people
):
    owner, editor, eddie = people
    _, writes = ApiKey.issue(team, name="eddie's CI", created_by=editor)
    client.force_login(owner)
    url = reverse("member-role", args=[eddie.pk])
    team_page = html.unescape(client.get(reverse("team-members")).content.decode())
    assert f'hx-post="{url}"' in team_page

    asked = client.post(url, {"role": "viewer"}, headers={"HX-Request": "true"})

    fragment = html.unescape(asked.content.decode())
    assert "<html" not in fragment and "<h1" not in fragment
    assert "Make eddie a viewer?" in fragment
    assert "The API key eddie made that can change monitors stops working" in fragment
    assert 'name="confirmed" value="yes"' in fragment
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.EDITOR

    done = client.post(
        url, {"role": "viewer", "confirmed": "yes"}, headers={"HX-Request": "true"}
    )

    # A page load, so the new role and the message show on the whole page.
    assert done.headers["HX-Redirect"] == reverse("team-members")
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.VIEWER
    assert answers(writes) == 401


def test_an_owner_stepping_down_is_asked_first_and_told_they_cannot_undo_it(
    client, team, people
):
    owner, editor, eddie = people
    eddie.change_role(Membership.Role.OWNER)
    olive = Membership.objects.get(team=team, user=owner)
    client.force_login(owner)

    asked = client.post(reverse("member-role", args=[olive.pk]), {"role": "editor"})

    page = html.unescape(asked.content.decode())
    assert "Make yourself an editor?" in page
    assert "Only another owner can make you an owner again." in page
    assert "Stay an owner" in page
    olive.refresh_from_db()
    assert olive.role == Membership.Role.OWNER


def test_a_role_change_without_consequences_is_made_at_once(client, team, people):
    owner, editor, eddie = people
    ApiKey.issue(team, name="eddie's reports", created_by=editor,
                 scope=ApiKey.Scope.READ)  # fmt: skip
    client.force_login(owner)

    made_viewer = client.post(
        reverse("member-role", args=[eddie.pk]), {"role": "viewer"}
    )

    assert made_viewer.status_code == 302
    eddie.refresh_from_db()
    assert eddie.role == Membership.Role.VIEWER


def test_the_last_owner_stepping_down_is_refused_not_asked(client, team, people):
    owner, _, _ = people
    olive = Membership.objects.get(team=team, user=owner)
    client.force_login(owner)

    response = client.post(
        reverse("member-role", args=[olive.pk]), {"role": "viewer"}, follow=True
    )

    page = html.unescape(response.content.decode())
    assert "A team always keeps at least one owner" in page
    assert "Make yourself a viewer?" not in page
    olive.refresh_from_db()
    assert olive.role == Membership.Role.OWNER


def test_making_yourself_a_viewer_is_said_in_the_first_person(client, team, people):
    owner, editor, eddie = people
    eddie.change_role(Membership.Role.OWNER)
    ApiKey.issue(team, name="olive's", created_by=owner)
    client.force_login(owner)

    page = html.unescape(client.get(reverse("team-members")).content.decode())

    assert (
        "Making yourself a viewer also turns off the API key you made that can "
        "change monitors."
    ) in page


def test_an_editor_made_an_owner_keeps_their_keys(client, team, people):
    owner, editor, eddie = people
    _, writes = ApiKey.issue(team, name="eddie's CI", created_by=editor)
    client.force_login(owner)

    client.post(reverse("member-role", args=[eddie.pk]), {"role": "owner"})

    assert answers(writes) == 200


def test_making_a_member_a_viewer_in_the_admin_revokes_their_write_keys_too(
    admin_client, team, people
):
    owner, editor, eddie = people
    key, raw = ApiKey.issue(team, name="eddie's", created_by=editor)
    data = admin_team_form(team, key, viewer=eddie)

    response = admin_client.post(
        reverse("admin:monitors_team_change", args=[team.pk]), data
    )

    assert response.status_code == 302
    assert answers(raw) == 401
    entry = Activity.objects.get(team=team, kind=Activity.Kind.ROLE_CHANGED)
    assert entry.details["keys_revoked"] == 1


def test_someone_who_left_can_still_be_picked_in_the_activity_log(client, team, people):
    owner, editor, eddie = people
    client.force_login(editor)
    client.post(reverse("member-remove", args=[eddie.pk]))
    client.force_login(owner)

    page = html.unescape(client.get(reverse("team-activity")).content.decode())
    assert f'<option value="{editor.pk}">eddie (no longer in the team)</option>' in page
    shown = client.get(reverse("team-activity"), {"person": editor.pk})
    entries = list(shown.context["entries"])
    assert entries and {e.user_id for e in entries} == {editor.pk}


def test_deleting_a_teams_only_owner_outside_the_admin_is_refused_in_words(
    team, people
):
    """A script or `manage.py shell` deleting the account would leave the
    team's other members with nobody who may invite, change roles or hand
    ownership on."""
    from monitors.models import LastOwnerError

    owner, editor, _ = people

    # Django deletes in a transaction of its own, rolled back on refusal.
    with pytest.raises(LastOwnerError) as refused, transaction.atomic():
        owner.delete()

    assert str(refused.value) == (
        "olive is the only owner of Acme, which has other members: make one of "
        "them an owner first, or delete the team."
    )
    assert Membership.objects.filter(
        team=team, user=owner, role=Membership.Role.OWNER
    ).exists()
    assert not Activity.objects.filter(
        team=team, kind=Activity.Kind.MEMBER_REMOVED
    ).exists()


def test_the_only_owner_goes_once_another_owner_is_named(
    team, people, django_user_model
):
    owner, editor, eddie = people
    eddie.change_role(Membership.Role.OWNER)

    owner.delete()

    assert not django_user_model.objects.filter(username="olive").exists()
    assert list(
        Membership.objects.filter(team=team).values_list("user", flat=True)
    ) == [editor.pk]


def test_deleting_someone_alone_in_their_team_outside_the_admin_waits_for_the_team(
    team, people, django_user_model
):
    """Gone, they would leave a team of nobody whose monitors go on checking
    and e-mailing; the Team page sends them to an administrator to delete the
    team, and so does this."""
    from monitors.models import LastOwnerError

    _, editor, _ = people
    alone = Team.objects.create(name="Solo", slug="solo")
    Membership.objects.create(team=alone, user=editor, role=Membership.Role.OWNER)

    with pytest.raises(LastOwnerError) as refused, transaction.atomic():
        editor.delete()

    assert str(refused.value) == (
        "eddie is the only member of Solo: delete the team first, or its "
        "monitors go on checking with nobody in it."
    )
    assert Membership.objects.filter(team=alone, user=editor).exists()
    alone.delete()
    editor.delete()
    assert not django_user_model.objects.filter(username="eddie").exists()


def user_form(client, person) -> dict[str, object]:
    """The admin's change form for `person` as it shows it, ready to post."""
    from django.urls import reverse as url_of

    page = client.get(url_of("admin:auth_user_change", args=[person.pk]))
    form = page.context["adminform"].form
    data: dict[str, object] = {
        name: value
        for name, value in form.initial.items()
        if name in form.fields and not form.fields[name].disabled and value is not None
    }
    data["groups"] = []
    data["user_permissions"] = []
    for key in ("last_login", "date_joined"):
        data.pop(key, None)
    at = person.date_joined
    data |= {"date_joined_0": at.strftime("%Y-%m-%d"), "date_joined_1": "12:00:00"}
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data |= {
            f"{management.prefix}-{name}": value
            for name, value in management.initial.items()
        }
        for number, row in enumerate(formset.formset.forms):
            data[f"{formset.formset.prefix}-{number}-id"] = row.instance.pk
            data[f"{formset.formset.prefix}-{number}-user"] = person.pk
    return data


def test_switching_off_a_teams_only_owner_in_the_admin_is_done_and_said(
    admin_client, team, people
):
    """The administrator may (the account may be compromised), but is told
    the team is left with nobody who may manage it."""
    owner, editor, _ = people
    url = reverse("admin:auth_user_change", args=[owner.pk])
    form = user_form(admin_client, owner)
    form.pop("is_active")

    response = admin_client.post(url, form, follow=True)

    said = [str(m) for m in response.context["messages"]]
    owner.refresh_from_db()
    assert not owner.is_active
    assert (
        "olive was the only owner of Acme, which has other members: while the "
        "account is switched off nobody there can invite people, change roles "
        "or give the team another owner. Make one of them an owner on the "
        "team's page here."
    ) in said


def test_switching_off_someone_alone_in_their_team_says_its_monitors_go_on_checking(
    admin_client, django_user_model
):
    """Nobody is left who can sign in to see the team's monitors, which keep
    checking and sending: the account may be switched back on, so they are
    not paused, but the administrator is told and shown where to stop them."""
    from monitors.models import Monitor

    solo = django_user_model.objects.create_user("sam", "s@solo.test", PASSWORD)
    alone = Team.objects.create(name="Solo", slug="solo")
    Membership.objects.create(team=alone, user=solo, role=Membership.Role.OWNER)
    for name in ("Pricing", "Careers"):
        Monitor.objects.create(team=alone, name=name, schedule_cron="0 * * * *")
    form = user_form(admin_client, solo)
    form.pop("is_active")

    response = admin_client.post(
        reverse("admin:auth_user_change", args=[solo.pk]), form, follow=True
    )

    said = [html.unescape(str(m)) for m in response.context["messages"]]
    solo.refresh_from_db()
    assert not solo.is_active
    warning = next(m for m in said if "Solo" in m)
    assert strip_tags(warning) == (
        "sam was the only member of Solo who can sign in: while the account is "
        "switched off nobody can see its 2 monitors, which go on checking and "
        "sending notifications. Pause them or delete the team here."
    )
    monitors = reverse("admin:monitors_monitor_changelist")
    assert f'href="{monitors}?team__id__exact={alone.pk}"' in warning
    assert f'href="{reverse("admin:monitors_team_delete", args=[alone.pk])}"' in warning
    assert set(Monitor.objects.filter(team=alone).values_list("status", flat=True)) == {
        Monitor.Status.ACTIVE
    }


def test_switching_off_the_last_owner_still_switched_on_warns_as_for_the_only_one(
    admin_client, team, people, django_user_model
):
    """An owner whose account is already switched off manages nothing."""
    owner, editor, _ = people
    away = django_user_model.objects.create_user("otto", "t@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=away, role=Membership.Role.OWNER)
    away.is_active = False
    away.save()
    form = user_form(admin_client, owner)
    form.pop("is_active")

    response = admin_client.post(
        reverse("admin:auth_user_change", args=[owner.pk]), form, follow=True
    )

    said = [str(m) for m in response.context["messages"]]
    assert (
        "olive was the only owner of Acme, which has other members: while the "
        "account is switched off nobody there can invite people, change roles "
        "or give the team another owner. Make one of them an owner on the "
        "team's page here."
    ) in said


def test_switching_off_an_owner_whose_others_are_all_switched_off_says_nobody_can_see(
    admin_client, team, people
):
    owner, editor, _ = people
    editor.is_active = False
    editor.save()
    form = user_form(admin_client, owner)
    form.pop("is_active")

    response = admin_client.post(
        reverse("admin:auth_user_change", args=[owner.pk]), form, follow=True
    )

    said = " ".join(html.unescape(str(m)) for m in response.context["messages"])
    assert (
        "olive was the only member of Acme who can sign in: while the account is "
        "switched off nobody can see the team; none of its monitors is checking "
        "now."
    ) in said


def test_switching_off_warns_of_no_team_the_account_is_not_in(
    admin_client, team, people, django_user_model
):
    """eddie, already switched off, is Bobcorp's only owner: that is his
    team's state, not something switching off olive (Acme only) leaves."""
    owner, editor, _ = people
    bobcorp = Team.objects.create(name="Bobcorp", slug="bobcorp")
    Membership.objects.create(team=bobcorp, user=editor, role=Membership.Role.OWNER)
    carl = django_user_model.objects.create_user("carl", "c@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=carl, role=Membership.Role.OWNER)
    editor.is_active = False
    editor.save()
    form = user_form(admin_client, owner)
    form.pop("is_active")

    response = admin_client.post(
        reverse("admin:auth_user_change", args=[owner.pk]), form, follow=True
    )

    said = [html.unescape(str(m)) for m in response.context["messages"]]
    owner.refresh_from_db()
    assert not owner.is_active
    assert not [m for m in said if "Bobcorp" in m or "only" in m]


def test_switching_off_an_editor_of_a_team_with_no_owner_signing_in_says_no_only_owner(
    admin_client, team, people, django_user_model
):
    """Acme's only owner is switched off already: eddie, an editor, was never
    its owner, and others there can still sign in."""
    owner, editor, _ = people
    vera = django_user_model.objects.create_user("vera", "v@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=vera, role=Membership.Role.VIEWER)
    owner.is_active = False
    owner.save()
    form = user_form(admin_client, editor)
    form.pop("is_active")

    response = admin_client.post(
        reverse("admin:auth_user_change", args=[editor.pk]), form, follow=True
    )

    said = " ".join(html.unescape(str(m)) for m in response.context["messages"])
    editor.refresh_from_db()
    assert not editor.is_active
    assert "only owner" not in said


def test_switching_off_the_last_editor_who_can_sign_in_says_nobody_can_see(
    admin_client, team, people
):
    """Not an owner, but the last of the team who can sign in: worth saying."""
    owner, editor, _ = people
    owner.is_active = False
    owner.save()
    form = user_form(admin_client, editor)
    form.pop("is_active")

    response = admin_client.post(
        reverse("admin:auth_user_change", args=[editor.pk]), form, follow=True
    )

    said = " ".join(html.unescape(str(m)) for m in response.context["messages"])
    assert (
        "eddie was the only member of Acme who can sign in: while the account is "
        "switched off nobody can see the team; none of its monitors is checking "
        "now."
    ) in said


def test_switching_off_one_of_two_owners_in_the_admin_warns_of_nothing(
    admin_client, team, people
):
    owner, editor, eddie = people
    eddie.change_role(Membership.Role.OWNER)
    form = user_form(admin_client, owner)
    form.pop("is_active")

    response = admin_client.post(
        reverse("admin:auth_user_change", args=[owner.pk]), form, follow=True
    )

    said = " ".join(str(m) for m in response.context["messages"])
    owner.refresh_from_db()
    assert not owner.is_active
    assert "only owner" not in said


def test_an_owner_alone_in_the_team_is_told_how_to_leave_it_in_words_they_can_follow(
    client, team, django_user_model
):
    """ "Make someone else an owner" asks the impossible of someone alone in
    the team; the Team page offers no way to delete a team."""
    olive = django_user_model.objects.create_user("olive", "o@acme.test", PASSWORD)
    Membership.objects.create(team=team, user=olive, role=Membership.Role.OWNER)
    client.force_login(olive)

    page = html.unescape(client.get(reverse("team-members")).content.decode())

    assert (
        "The team's only owner. To leave, first invite someone and make them an "
        "owner, or ask an administrator to delete the team."
    ) in page
