"""POST /v2/monitor/bulk (a Pagewatch extension): the monitor list's actions
on many monitors at once, through monitors.bulk as the dashboard does them.
run starts a check of each as POST /v2/monitor/{id}/run does (the same
refusals), and says which were left alone and why.
mute takes mutedUntil as PATCH does (a moment in the future, the far-future
one for until unmuted, by the same rules.mute_rule); unmute ends the mute.
A read key, or a key whose maker is now a viewer, is refused like any other
write (KeyScopeAllows). Ids that are not the team's live monitors (another
team's, deleted, unknown) are answered as not found, as one of them would be
on its own."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from checks.dispatch import QueueUnavailable
from checks.targets.options import StrictCharField, StrictMixin
from monitors import bulk, rules
from monitors.api.auth import ApiKeyRateThrottle
from monitors.api.base import ApiView
from monitors.api.errors import service_unavailable
from monitors.api.views import RESPONSE_HEADERS, error_responses
from monitors.models import Monitor
from teams.activity import Actor

# The wire's names (camelCase, as the API's fields) for the workflow's actions.
ACTIONS = {
    "pause": bulk.Action.PAUSE,
    "resume": bulk.Action.RESUME,
    "addTag": bulk.Action.ADD_TAG,
    "removeTag": bulk.Action.REMOVE_TAG,
    "delete": bulk.Action.DELETE,
    "mute": bulk.Action.MUTE,
    "unmute": bulk.Action.UNMUTE,
    "run": bulk.Action.RUN,
}
WIRE_ACTIONS = list(ACTIONS)
TAG_ACTIONS = [name for name, action in ACTIONS.items() if action.takes_tag]
MUTE_NEEDS_END = (
    "Required for mute: when the mute ends (ISO 8601, in the future; "
    "9999-12-31T00:00:00Z until unmuted). To end a mute, use unmute."
)


class BulkMonitorsSerializer(StrictMixin, serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.UUIDField(),
        min_length=1,
        max_length=bulk.IDS_MAX,
        help_text=f"The monitors to act on: 1 to {bulk.IDS_MAX} ids. For "
        "run, each found monitor counts as one request against the key's rate "
        "limit (429 when that passes it; nothing is started).",
    )
    action = serializers.ChoiceField(
        choices=WIRE_ACTIONS,
        help_text="pause and resume as PATCH's status does; addTag and "
        "removeTag the tag named in `tag`; delete as DELETE does (no undo); "
        "mute their notifications until `mutedUntil`, and unmute, as PATCH's "
        "mutedUntil does; run starts a check of each now, as POST "
        "/v2/monitor/{id}/run does (paused monitors and those running a check "
        "already are left alone).",
    )
    tag = StrictCharField(
        required=False,
        allow_blank=True,
        help_text="The tag's name (any case), for addTag and removeTag only.",
    )
    mutedUntil = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="For mute only: until when their notifications are muted "
        "(ISO 8601, in the future); 9999-12-31T00:00:00Z mutes until unmuted. "
        "Use unmute to end a mute.",
    )
    origin = StrictCharField(
        required=False, max_length=200, help_text="Sent by the SDKs; ignored."
    )

    def validate_mutedUntil(self, until: datetime | None) -> datetime | None:  # noqa: N802
        if until is None:
            raise ValidationError(MUTE_NEEDS_END, code="null")
        rule = rules.mute_rule(until, timezone.now())
        if rule is not None:
            raise ValidationError(rule.api, code=rule.code)
        return rules.clean_muted_until(until)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        action = ACTIONS[attrs["action"]]
        if action == bulk.Action.MUTE and "mutedUntil" not in attrs:
            raise serializers.ValidationError({"mutedUntil": [MUTE_NEEDS_END]})
        if action != bulk.Action.MUTE and "mutedUntil" in attrs:
            raise serializers.ValidationError({"mutedUntil": ["Only for mute."]})
        if not action.takes_tag:
            if "tag" in attrs:
                raise serializers.ValidationError(
                    {"tag": [f"Only for {' and '.join(TAG_ACTIONS)}."]}
                )
            return attrs | {"action": action}
        if "tag" not in attrs:
            raise serializers.ValidationError(
                {"tag": [f"Required for {' and '.join(TAG_ACTIONS)}."]}
            )
        name, problem = bulk.tag_problem(attrs["tag"])
        if problem:
            raise serializers.ValidationError({"tag": [problem]})
        return attrs | {"action": action, "tag": name}


IDS = serializers.ListField(child=serializers.UUIDField())


def run_ids(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.UUIDField(), required=False, help_text=help_text
    )


BULK_RESPONSE = inline_serializer(
    "BulkMonitorsResponse",
    {
        "success": serializers.BooleanField(help_text="Always true."),
        "data": inline_serializer(
            "BulkMonitorsOutcome",
            {
                "action": serializers.ChoiceField(choices=WIRE_ACTIONS),
                "changed": IDS,
                "unchanged": serializers.ListField(
                    child=serializers.UUIDField(),
                    help_text="Found, with nothing to do: already paused, "
                    "active, tagged, without the tag, muted until that moment, "
                    "or not muted; for run, not started (see paused, "
                    "alreadyRunning and queueUnavailable; one the database "
                    "failed on is only here: try again).",
                ),
                "notFound": serializers.ListField(
                    child=serializers.UUIDField(),
                    help_text="Not a live monitor of the team (unknown, "
                    "deleted, or another team's); nothing done to them.",
                ),
                "tooManyTags": serializers.ListField(
                    child=serializers.UUIDField(),
                    help_text="addTag: left without the tag, as they have the "
                    "most tags a monitor may have already.",
                ),
                "paused": run_ids(
                    "run only: left alone as they are paused (resume them first)."
                ),
                "alreadyRunning": run_ids(
                    "run only: left alone as a check of theirs is running already."
                ),
                "queueUnavailable": run_ids(
                    "run only: not started, as the task queue stopped taking "
                    "checks after the ones in changed (when it takes none, the "
                    "answer is a 503, as for a single run)."
                ),
                "checks": serializers.DictField(
                    child=serializers.UUIDField(),
                    required=False,
                    help_text="run only: the check started for each monitor in "
                    "changed, by monitor id.",
                ),
            },
        ),
    },
)


class MonitorBulkView(ApiView):
    @extend_schema(
        operation_id="bulkMonitors",
        summary="Pause, resume, mute, unmute, tag, untag, delete or check now "
        "many monitors (Pagewatch extension)",
        request=BulkMonitorsSerializer,
        parameters=RESPONSE_HEADERS,
        responses={200: BULK_RESPONSE} | error_responses(400, 403, 413, 415),
    )
    def post(self, request: Request) -> Response:
        serializer = BulkMonitorsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        wanted: list[uuid.UUID] = list(dict.fromkeys(serializer.validated_data["ids"]))
        action: bulk.Action = serializer.validated_data["action"]
        team = request.user.team
        chosen = Monitor.objects.for_team(team).filter(pk__in=wanted)
        found = set(chosen.values_list("pk", flat=True))
        if action == bulk.Action.RUN:
            # A check per monitor: each counts against the key's rate as a
            # single run would (this request counted as the first).
            ApiKeyRateThrottle().charge(request, self, len(found) - 1)
        outcome = bulk.Outcome()
        if found:
            outcome = bulk.act(
                chosen,
                action,
                Actor.of(request),
                team,
                timezone.now(),
                serializer.validated_data.get("tag"),
                serializer.validated_data.get("mutedUntil"),
            )
        runs = outcome.runs
        if runs is not None:
            if runs.queue_down and not runs.started:
                raise service_unavailable(QueueUnavailable.message)
            found -= {m.pk for m in runs.gone}  # deleted meanwhile
        changed = {m.pk for m in outcome.done}
        full = {m.pk for m in outcome.full}

        def listed(pks: set[uuid.UUID]) -> list[str]:
            return [str(pk) for pk in wanted if pk in pks]

        data = {
            "action": serializer.initial_data["action"],
            "changed": listed(changed),
            "unchanged": listed(found - changed - full),
            "notFound": listed(set(wanted) - found),
            "tooManyTags": listed(full),
        }
        if runs is not None:
            started = {m.pk: check.pk for m, check in runs.started.items()}
            data |= {
                "paused": listed({m.pk for m in runs.paused}),
                "alreadyRunning": listed({m.pk for m in runs.running}),
                "queueUnavailable": listed({m.pk for m in runs.queue_down}),
                "checks": {str(pk): str(started[pk]) for pk in wanted if pk in started},
            }
        return Response({"success": True, "data": data})
