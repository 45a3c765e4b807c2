"""The dashboard's Channels page: a team's channels, each with its last
deliveries and errors in plain words, a test button, and one form to add or
change one. The form's input goes through the API's ChannelInputSerializer,
so the dashboard and /v2/channels accept exactly the same things; the kinds,
their fields and their help come from the registry (checks.notify.kinds)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from checks.deleting import delete_channels
from checks.models import Delivery
from checks.notify import channels as channel_events
from checks.notify import kinds
from checks.notify.kinds.slack import picker_channels
from checks.notify.transports import DeliveryError, words_for_test_message
from monitors.channel_editing import replaced_secrets, save_channel
from monitors.dashboard.base import Action, DashboardRequest, team_view
from monitors.judging import judge_available
from monitors.models import Channel, Team
from monitors.wire.channel import ChannelInputSerializer
from teams.activity import Actor, Kind, record
from teams.models import Activity

RECENT = 5


def _get(request: DashboardRequest, pk: int) -> Channel:
    channel = Channel.objects.for_team(request.team).shared().filter(pk=pk).first()
    if channel is None:
        raise Http404("Channel not found")
    return channel


@require_http_methods(["GET"])
@team_view
def channel_list(request: DashboardRequest) -> HttpResponse:
    # A sliced prefetch is one windowed query for every channel's last few.
    # It numbers every delivery of the team's channels before keeping the last
    # few: without the messages' bodies (not shown here) that sort stays small.
    recent = Prefetch(
        "deliveries",
        queryset=Delivery.objects.select_related("monitor")
        .defer("body", "done_with")
        .order_by("-created_at", "-id")[:RECENT],
        to_attr="recent",
    )
    rows = list(
        Channel.objects.for_team(request.team)
        .shared()
        .with_monitors()
        .prefetch_related(recent)
    )
    channels = described(rows, request.team)
    for channel in channels:
        # Only this page says so: a monitor's page would pay the query for nothing.
        kind = channel.kind_class  # type: ignore[attr-defined]
        channel.reaches_nobody = (  # type: ignore[attr-defined]
            kind.reaches_nobody(request.team, channel.settings) if kind else False
        )
        channel.last_left = (  # type: ignore[attr-defined]
            _last_left(request.team, channel) if channel.reaches_nobody else None
        )
    return render(
        request,
        "monitors/channels.html",
        {"channels": channels, "kinds": kinds.all_kinds()},
    )


def _last_left(team: Team, channel: Channel) -> Activity | None:
    """The latest entry of someone stopping this channel's e-mails with the
    link in one: who left it with nobody."""
    return (
        Activity.objects.filter(
            team=team,
            kind=Kind.CHANNEL_LEFT,
            details__channel=channel.pk,
            details__nobody_left=True,
        )
        .order_by("-id")
        .first()
    )


def described(channels: list[Channel], team: Team) -> list[Channel]:
    """The channels, each with its kind (`kind_class`) and who gets its
    messages (`sends_to`, names), as the Channels page and a monitor's page
    say them."""
    for channel in channels:
        kind = kinds.kind_for(channel.kind)
        channel.kind_class = kind  # type: ignore[attr-defined]
        channel.sends_to = (  # type: ignore[attr-defined]
            kind.sends_to(team, channel.settings) if kind else []
        )
    return channels


def _form_data(
    request: DashboardRequest,
    kind: kinds.ChannelKind,
    choices: dict[str, list[tuple[str, str]]],
) -> dict[str, Any]:
    post = request.POST
    data: dict[str, Any] = {
        "name": post.get("name", ""),
        "kind": kind.name,
        "settings": {
            # A setting picked from a list is every box ticked.
            key: post.getlist(f"setting_{key}")
            if key in choices
            else post.get(f"setting_{key}", "")
            for key in kind.fields
            # A secret left empty keeps the stored one.
            if not (key in kind.secrets and not post.get(f"setting_{key}"))
        },
        "events": post.getlist("events"),
        "digest": post.get("digest") or None,
        "failingAfter": int(post["failing_after"])
        if post.get("failing_after", "").isdecimal()
        else post.get("failing_after") or 3,
    }
    if post.get("digest_at"):
        data["digestAt"] = post["digest_at"]
    return data


# The API's top-level fields in the form's words: its messages ("This field
# may not be blank.") name fields that are not on the page.
PLAIN_ERRORS = {
    "name": "Give the channel a name.",
    "events": "Choose what to tell this channel about.",
    "digest": "Choose when to send.",
    "digestAt": "Enter the digest time as hours and minutes, e.g. 09:00.",
    "failingAfter": "Enter a number of failed checks from 1 to 100.",
    # The only kind the form offers is one it knows: its problem is that the
    # server lacks a setting, which the notice at the top explains.
    "kind": "This kind of channel cannot be saved until it is set up on this server.",
}


# Where each top-level field's problem is, for the form's summary to lead to.
ERROR_ANCHORS = {
    "name": "channel-name",
    "events": "channel-events",
    "digest": "channel-digest",
    "digestAt": "channel-digest-at",
    "failingAfter": "channel-failing-after",
}


def plain_errors(errors: dict[str, Any]) -> dict[str, str]:
    """The form's problem with each top-level field, in plain words; a field
    without its own words (the kind's "needs a setting") keeps its message."""
    return {
        field: PLAIN_ERRORS.get(field) or " ".join(str(p) for p in problems)
        for field, problems in errors.items()
        if field != "settings"
    }


def _workspace_channels(
    kind: kinds.ChannelKind, *, refresh: bool = False
) -> list[dict[str, str]]:
    """The workspace's channels to pick from, when the kind has a picker and
    can reach Slack; nothing (a plain id field) otherwise. `refresh`: asked
    of Slack again rather than remembered."""
    if (
        kind.needs_setting is None
        or kind.unavailable()
        or "channelId" not in kind.fields
    ):
        return []
    try:
        return picker_channels(refresh=refresh)
    except DeliveryError:
        return []


def _named_by_picker(data: dict[str, Any], listed: list[dict[str, str]]) -> None:
    """The picked channel's name, as Slack lists it, for the Channels page to
    say where the channel posts: the picker replaces a field to type it in,
    which was left empty or went stale when another channel was picked."""
    settings = data["settings"]
    for found in listed:
        if found["id"] == settings.get("channelId"):
            settings["channelName"] = found["name"]


def _slack_choices(
    listed: list[dict[str, str]], fields: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """The picker's options: the channel's own first when Slack did not list
    it (archived since, or past the pages the picker reads): a browser sends
    the first option when none is selected, so saving any other change moved
    the channel elsewhere."""
    if not listed:
        return []
    listed = list(listed)
    given = {f["key"]: f["value"] for f in fields}
    current = given.get("channelId") or ""
    if current and all(c["id"] != current for c in listed):
        listed.insert(0, {"id": current, "name": given.get("channelName") or current})
    return listed


@require_http_methods(["GET", "POST"])
# A viewer gets the refusal before the form, as on the monitor form, rather
# than a form whose save is then refused.
@team_view(needs=Action.EDIT)
def channel_edit(request: DashboardRequest, pk: int | None = None) -> HttpResponse:
    channel = _get(request, pk) if pk is not None else None
    name = (
        channel.kind if channel else request.GET.get("kind") or request.POST.get("kind")
    )
    kind = kinds.offered(name or "")
    if kind is None:
        return render(
            request,
            "monitors/channel_form.html",
            {"kinds": kinds.all_kinds(), "channel": None, "kind": None},
        )
    errors: dict[str, Any] = {}
    choices = kind.choices(request.team)
    refresh = request.method == "GET" and request.GET.get("refresh") == "1"
    listed = _workspace_channels(kind, refresh=refresh)
    if request.method == "POST":
        data = _form_data(request, kind, choices)
        _named_by_picker(data, listed)
        serializer = ChannelInputSerializer(
            data=data,
            context={"channel": channel, "team": request.team},
            partial=channel is not None,
        )
        if serializer.is_valid():
            before = dict(channel.settings) if channel else {}
            saved = save_channel(
                request.team, serializer.validated_data, timezone.now(), channel
            )
            made = Kind.CHANNEL_EDITED if channel else Kind.CHANNEL_CREATED
            record(Actor.of(request), request.team, made, name=saved.name,
                   **replaced_secrets(saved, before))  # fmt: skip
            messages.success(request, f"Channel “{saved.name}” saved.")
            return redirect("channels")
        errors = serializer.errors
    shown = kind.shown_for(channel.team, channel.settings) if channel else {}
    problems = plain_errors(errors)
    fields = _setting_fields(request, kind, shown, errors, choices)
    context = {
        "channel": channel,
        "kind": kind,
        "kinds": kinds.all_kinds(),
        "fields": fields,
        "errors": errors,
        "field_errors": problems,
        "error_links": [
            (ERROR_ANCHORS.get(field), problem) for field, problem in problems.items()
        ],
        "unavailable": kind.unavailable_notice(),
        "slack_channels": _slack_choices(listed, fields),
        "event_choices": Channel.Event.choices,
        "judge_available": judge_available(),
        "chosen_events": request.POST.getlist("events")
        if request.method == "POST"
        else (channel.events if channel else list(Channel.DEFAULT_EVENTS)),
        "digest_choices": Channel.Digest.choices,
        "name": request.POST.get("name", channel.name if channel else ""),
        "digest": request.POST.get("digest", channel.digest if channel else ""),
        "digest_at": request.POST.get(
            "digest_at",
            channel.digest_at.strftime("%H:%M")
            if channel and channel.digest_at
            else "",
        ),
        "failing_after": request.POST.get(
            "failing_after",
            channel.failing_after if channel else Channel.FAILING_AFTER_DEFAULT,
        ),
    }
    return render(
        request, "monitors/channel_form.html", context, status=400 if errors else 200
    )


def _setting_fields(
    request: DashboardRequest,
    kind: kinds.ChannelKind,
    shown: dict[str, Any],
    errors: dict[str, Any],
    choices: dict[str, list[tuple[str, str]]],
) -> list[dict[str, Any]]:
    """One entry per setting of the channel's kind: what was typed or stored
    (a secret only as its masked ending), the boxes of one picked from a
    list, and its errors."""
    setting_errors = errors.get("settings")
    if not isinstance(setting_errors, dict):
        setting_errors = {}

    def picked(key: str) -> list[str]:
        if request.method == "POST":
            return request.POST.getlist(f"setting_{key}")
        return list(shown.get(key) or [])

    return [
        {
            "key": key,
            "label": label,
            "help": help_text,
            "secret": key in kind.secrets,
            "value": ""
            if key in kind.secrets
            else request.POST.get(f"setting_{key}", shown.get(key, "")),
            "options": _options(choices[key], picked(key)) if key in choices else None,
            "stored": shown.get(key) if key in kind.secrets else None,
            "errors": [
                f"Enter the {label}." if problem == "Required." else problem
                for problem in setting_errors.get(key, [])
            ],
        }
        for key, (label, help_text) in kind.fields.items()
    ]


def _options(choices: list[tuple[str, str]], picked: list[str]) -> list[dict[str, Any]]:
    return [
        {"value": value, "words": words, "checked": value in picked}
        for value, words in choices
    ]


@require_POST
@team_view(needs=Action.EDIT)
def channel_test(request: DashboardRequest, pk: int) -> HttpResponse:
    channel = _get(request, pk)
    delivery = channel_events.send_test(channel)
    sent = delivery.status == Delivery.Status.DELIVERED
    (messages.success if sent else messages.error)(
        request, words_for_test_message(channel.name, delivery)
    )
    return redirect("channels")


@require_http_methods(["GET", "POST"])
@team_view(needs=Action.EDIT)
def channel_delete(request: DashboardRequest, pk: int) -> HttpResponse:
    """Asks first, naming the monitors that stop sending there, as deleting a
    monitor does."""
    channel = _get(request, pk)
    if request.method != "POST":
        served = Channel.objects.filter(pk=channel.pk).with_monitors().get()
        context = {"channel": served}
        return render(request, "monitors/channel_confirm_delete.html", context)
    delete_channels(Channel.objects.filter(pk=channel.pk))
    record(Actor.of(request), request.team, Kind.CHANNEL_DELETED, name=channel.name)
    messages.success(request, f"Channel “{channel.name}” deleted.")
    return redirect("channels")
