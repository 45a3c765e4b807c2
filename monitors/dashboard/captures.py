"""Screenshots and PDFs: the signed links (checks.captures), public since
the signature is the credential, and narrow -- one capture per link, served
as the image or PDF it is and never as anything a browser would run; and the
dashboard's before/after/visual change of a page's screenshots."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from checks.captures import LinkExpired, capture_for, visual_change_of
from checks.content.visual import NotComparable, marked_png
from checks.models import Capture
from monitors.dashboard.base import DashboardRequest, get_page_for, team_view

SERVED_TYPES = frozenset({"image/png", "image/jpeg", "application/pdf"})


@login_not_required
@require_GET
def capture(request: HttpRequest, token: str) -> HttpResponse:
    try:
        found = capture_for(token)
    except LinkExpired:
        return HttpResponse(
            "This link has expired; open the result again for a new one.",
            status=410,
            content_type="text/plain; charset=utf-8",
        )
    if found is None or found.media_type not in SERVED_TYPES:
        raise Http404("No such screenshot.")
    response = HttpResponse(bytes(found.data), content_type=found.media_type)
    response["Content-Length"] = str(found.size)
    response["Content-Disposition"] = "inline"
    # The same link always names the same bytes (content-addressed).
    response["Cache-Control"] = "private, max-age=3600, immutable"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["X-Robots-Tag"] = "noindex"
    return response


@require_GET
@team_view
def page_visual_change(
    request: DashboardRequest, pk: uuid.UUID, check_id: uuid.UUID, page_id: uuid.UUID
) -> HttpResponse:
    """The visual change of one page result (monitors.dashboard.base.get_page_for
    scopes it to the caller's team) at full size: its screenshot with the
    places that look different from the previous screenshot outlined."""
    page = get_page_for(request, pk, check_id, page_id)
    after, before = page.screenshot, page.previous_screenshot()
    if after is None or before is None:
        raise Http404("No two screenshots to compare.")
    try:
        change = visual_change_of(page, before)
    except NotComparable as exc:
        raise Http404(str(exc)) from None
    shot = Capture.objects.filter(content_hash=after).values_list("data", flat=True)
    if change is None or not shot:
        raise Http404("A screenshot is no longer kept.")
    response = HttpResponse(
        marked_png(bytes(shot[0]), change), content_type="image/png"
    )
    response["Cache-Control"] = "private, max-age=3600"
    response["X-Changed-Fraction"] = f"{change.changed_fraction:.4f}"
    return response
