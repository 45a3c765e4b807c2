"""POST /v2/import, GET /v2/import/{id} and GET /v2/export (Pagewatch
extensions): thin views over monitors.moving. The same envelope, errors and
keys as /v2/monitor; every run is looked up through the caller's team."""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from checks.targets.options import StrictBooleanField, StrictCharField, StrictMixin
from monitors import moving, rules
from monitors.api.auth import sees_hooks_whole
from monitors.api.base import ApiView
from monitors.api.errors import ApiError, not_found, service_unavailable
from monitors.api.parsers import JsonParser
from monitors.api.views import (
    RESPONSE_HEADERS,
    envelope,
    error_responses,
    ok,
    readable_by,
)
from monitors.models import ImportRun
from monitors.moving import importing, plan, remote
from monitors.moving.exporting import export_document
from teams.activity import Actor

SOURCE_HELP = (
    "changedetection (a backup zip, or url + apiKey of its API), urlwatch "
    "(urls.yaml), distill (its JSON export), firecrawl (url + apiKey of any "
    "/v2/monitor API, another Pagewatch included, or a file of its monitor "
    "list's JSON), pagewatch (an export "
    "document) or csv (one URL per line, or CSV with name, url, schedule, goal)."
)


class ImportRequestSerializer(StrictMixin, serializers.Serializer):
    source = serializers.ChoiceField(
        choices=sorted(moving.sources()), help_text=SOURCE_HELP
    )
    url = StrictCharField(
        required=False, max_length=2048, help_text="A remote source's base URL."
    )
    apiKey = StrictCharField(
        required=False, max_length=512, help_text="The remote source's API key."
    )
    dryRun = StrictBooleanField(
        default=True, help_text="true (default): only say what would be imported."
    )
    includeDuplicates = StrictBooleanField(
        default=False,
        help_text="Import monitors of addresses the team already watches too.",
    )

    def validate_apiKey(self, key: str) -> str:  # noqa: N802
        # The key is sent in a request header (x-api-key, Authorization), so
        # it is held to the rule of every header value Pagewatch sends.
        if rules.header_value_error("apiKey", key):
            raise ValidationError(
                "An API key is sent in a request header: use printable ASCII "
                "characters only, without line breaks."
            )
        return key


class ImportUploadSerializer(serializers.Serializer):
    source = serializers.ChoiceField(choices=sorted(moving.sources()))
    file = serializers.FileField(help_text="The file to import.")
    dryRun = serializers.BooleanField(default=True)
    includeDuplicates = serializers.BooleanField(default=False)


ITEM = inline_serializer(
    "ImportItem",
    {
        "ref": serializers.CharField(help_text="The source's own name for it."),
        "name": serializers.CharField(),
        "urls": serializers.ListField(child=serializers.CharField()),
        "imported": serializers.BooleanField(
            help_text="Whether it can be imported (is, unless a dry run)."
        ),
        "monitor": serializers.DictField(
            allow_null=True, help_text="The /v2/monitor create body it becomes."
        ),
        "reason": serializers.CharField(allow_null=True),
        "notes": serializers.ListField(child=serializers.CharField()),
        "duplicate": serializers.BooleanField(),
        "sameAddressAs": serializers.CharField(
            allow_null=True,
            help_text="For a duplicate of a watch earlier in the same source "
            "(not of a monitor): that watch's name.",
        ),
        "channels": serializers.ListField(
            child=serializers.CharField(),
            help_text="Pagewatch extension: the names of the team's channels the "
            "monitor sends to, made from the source's notification URLs (the "
            "team's channel of that URL, or a new Apprise channel).",
        ),
        "baselines": serializers.IntegerField(
            help_text="Pages whose last snapshot becomes their first baseline."
        ),
        "result": serializers.CharField(
            required=False,
            help_text="created, duplicate, not imported or failed (not on dry runs).",
        ),
        "monitorId": serializers.UUIDField(required=False, allow_null=True),
        "error": serializers.CharField(
            required=False,
            allow_null=True,
            help_text="Why it could not be saved (a result of failed).",
        ),
    },
)
IMPORT_RESULT = inline_serializer(
    "ImportResult",
    {
        "id": serializers.UUIDField(allow_null=True),
        "dryRun": serializers.BooleanField(),
        "status": serializers.CharField(
            help_text=(
                "previewed, queued, running, done or failed; an import previewed "
                "in the dashboard is preparing while its preview is made, or "
                "preview_failed."
            )
        ),
        "total": serializers.IntegerField(),
        "done": serializers.IntegerField(),
        "items": serializers.ListField(child=ITEM),
    },
)


def run_answer(run: ImportRun, request: Request) -> dict[str, Any]:
    """The run's progress and report; each monitor in it as `request`'s key
    may read it (views.readable_by), as GET /v2/monitor gives it."""
    items = [
        item | {"monitor": readable_by(request, item["monitor"])}
        if isinstance(item.get("monitor"), dict)
        else item
        for item in (run.report or {}).get("items", [])
    ]
    answer: dict[str, Any] = {
        "id": str(run.pk),
        "dryRun": False,
        "status": run.status,
        "total": run.total,
        "done": run.done,
        "items": items,
    }
    if run.report:
        answer |= {k: v for k, v in run.report.items() if k != "items"}
    if run.error:
        answer["error"] = run.error
    return answer


def _read(source: str, params: dict[str, Any]) -> list[moving.Planned]:
    upload = params.get("file")
    try:
        if upload is not None:
            if upload.size > moving.max_bytes():
                raise moving.ImportRefused("The file is too large.", status=413)
            return moving.read(source, data=upload.read(), filename=upload.name or "")
        if not params.get("url"):
            raise moving.ImportRefused(
                "Send the file as multipart field `file`, or give `url` (and "
                "`apiKey`) of a remote source."
            )
        # Read while the request waits, as the dry run answers with what it
        # read: bounded in time and in watches (remote.in_request).
        return moving.read(
            source,
            url=params["url"],
            api_key=params.get("apiKey", ""),
            bounds=remote.in_request(),
        )
    except moving.ImportRefused as exc:
        if exc.status == 413:
            raise ApiError(
                f"The file is larger than {moving.max_bytes() // 2**20} MB, the "
                "most Pagewatch imports (IMPORT_MAX_BYTES).",
                413,
                "PAYLOAD_TOO_LARGE",
            ) from None
        raise ApiError(exc.message, 400, "BAD_REQUEST") from None


class ImportView(ApiView):
    parser_classes = [JsonParser, MultiPartParser]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # Refused before a byte of the body is read: an upload cap Django's
        # own limits leave to the view (they do not count file parts).
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > moving.max_bytes() + 64 * 1024:
            raise ApiError(
                f"The upload is larger than {moving.max_bytes() // 2**20} MB, the "
                "most Pagewatch imports (IMPORT_MAX_BYTES).",
                413,
                "PAYLOAD_TOO_LARGE",
            )

    @extend_schema(
        operation_id="importMonitors",
        description=(
            "Pagewatch extension. Reads a source and lists each of its watches: "
            "the monitor it becomes, or why it is not imported, with notes of "
            "what does not carry over. With dryRun false the monitors are "
            "created (each in its own transaction); a large import answers 202 "
            "and runs as a task: follow it at GET /v2/import/{id}. A service "
            "given by `url` and `apiKey` is read while the request waits, so "
            "that a dry run answers with its watches: at most 250 watches, "
            "within 20 seconds; a larger or slower service is a 400 saying so "
            "before its watches are read (the dashboard's Import page reads any "
            "service in the background). An import made in the request whose "
            "database goes away part way answers 202, status running, saying "
            "how far it got in `error`: a worker goes on with the rest."
        ),
        request={
            "application/json": ImportRequestSerializer,
            "multipart/form-data": ImportUploadSerializer,
        },
        parameters=RESPONSE_HEADERS,
        responses={
            200: envelope("ImportResponse", IMPORT_RESULT),
            202: envelope("ImportQueuedResponse", IMPORT_RESULT),
        }
        | error_responses(400, 413, 415),
    )
    def post(self, request: Request) -> Response:
        if request.content_type.startswith("multipart/"):
            params = ImportUploadSerializer(data=request.data)
        else:
            params = ImportRequestSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        team = request.user.team
        items = plan.prepare(team, _read(data["source"], data))
        if data["dryRun"]:
            return ok(
                {
                    "id": None,
                    "dryRun": True,
                    "status": "previewed",
                    "total": len(items),
                    "done": 0,
                    "items": [item.as_dict() for item in items],
                }
            )
        run = importing.preview_run(
            team, data["source"], items, api_key=Actor.of(request).key
        )
        chosen = (
            [i.ref for i in items if i.duplicate] if data["includeDuplicates"] else []
        )
        paused = None
        try:
            run = importing.start_run(run, chosen, timezone.now())
        except importing.ImportNotQueued as not_queued:
            raise service_unavailable(not_queued.message) from None
        except importing.ImportPaused as stopped:
            # Not a 503: sent again, the import would make its monitors twice.
            paused = stopped.words(f"GET /v2/import/{run.pk} shows")
        code = status.HTTP_200_OK if run.is_finished else status.HTTP_202_ACCEPTED
        answer = run_answer(run, request)
        if paused:
            answer["error"] = paused
        return Response({"success": True, "data": answer}, status=code)


IMPORT_ID = OpenApiParameter(
    "import_id",
    OpenApiTypes.UUID,
    OpenApiParameter.PATH,
    description="A malformed id answers 404, like an unknown one.",
)


class ImportDetailView(ApiView):
    @extend_schema(
        operation_id="getImport",
        description="Pagewatch extension: an import's progress, then its report.",
        parameters=[IMPORT_ID, *RESPONSE_HEADERS],
        responses={200: envelope("ImportRunResponse", IMPORT_RESULT)}
        | error_responses(404),
    )
    def get(self, request: Request, import_id: str) -> Response:
        try:
            pk = uuid.UUID(str(import_id))
        except ValueError:
            raise not_found("Import") from None
        run = ImportRun.objects.filter(team=request.user.team, pk=pk).first()
        if run is None:
            raise not_found("Import")
        return ok(run_answer(run, request))


class ExportView(ApiView):
    @extend_schema(
        operation_id="exportMonitors",
        description=(
            "Pagewatch extension: every monitor of the team as one document "
            '(format "pagewatch-export"), each in the create shape plus its '
            "status. Credentials in headers (and, for a read-only key or one "
            "whose maker is now a viewer, the webhooks) are left out and "
            "listed under `redacted`. POST it back "
            "to /v2/import with source `pagewatch`."
        ),
        parameters=RESPONSE_HEADERS,
        responses={200: envelope("ExportResponse", OpenApiTypes.OBJECT)}
        | error_responses(),
    )
    def get(self, request: Request) -> Response:
        client = request.user
        return ok(
            export_document(
                client.team,
                timezone.now(),
                webhooks=sees_hooks_whole(request),
            )
        )
