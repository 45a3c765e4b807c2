from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from monitors import moving
from monitors.models import Team
from monitors.moving import importing, plan
from teams.activity import Actor


class Command(BaseCommand):
    help = (
        "Import monitors into a team from a file (a changedetection.io backup "
        "zip, urlwatch's urls.yaml, a Distill export, a Pagewatch export, a "
        "list or CSV of URLs) or from a service's address (--source "
        "changedetection or firecrawl, with --api-key). Lists what each watch "
        "becomes, or why it is not imported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("location", help="A file's path, or a service's URL")
        parser.add_argument("--team", required=True, help="Team slug")
        parser.add_argument(
            "--source",
            choices=sorted(moving.sources()),
            help="What the file or address is (guessed from a file when left out)",
        )
        parser.add_argument("--api-key", default="", help="The service's API key")
        parser.add_argument(
            "--dry-run", action="store_true", help="Only list what would happen"
        )
        parser.add_argument(
            "--include-duplicates",
            action="store_true",
            help="Also import watches of addresses the team already monitors",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        team = Team.objects.filter(slug=options["team"]).first()
        if team is None:
            raise CommandError(f"No team has the slug {options['team']!r}.")
        location: str = options["location"]
        remote = location.startswith(("http://", "https://"))
        source = options["source"]
        try:
            if remote:
                if not source:
                    raise CommandError("Say what the address is with --source.")
                label = moving.sources()[source].label_in_sentence()
                self.stderr.write(f"Reading watches from {label}…")
                items = moving.read(
                    source,
                    url=location,
                    api_key=options["api_key"],
                    progress=self._reading,
                )
            else:
                source, items = self._read_file(Path(location), source)
        except moving.ImportRefused as exc:
            raise CommandError(exc.message) from None
        plan.prepare(team, items)
        if options["dry_run"]:
            for item in items:
                self._line(item.as_dict() | {"result": None})
            would = sum(1 for i in items if i.importable and not i.duplicate)
            self.stdout.write(f"Dry run: {would} of {len(items)} would be created.")
            return
        report = importing.run_import(
            team,
            items,
            timezone.now(),
            include_duplicates=options["include_duplicates"],
            progress=self._progress,
            actor=Actor.command(),
            source=source,
        )
        for outcome in report.outcomes:
            self._line(outcome.as_dict())
        self.stdout.write(
            f"Created {report.created} of {len(items)} monitors in team '{team.slug}'."
        )

    def _read_file(
        self, path: Path, source: str | None
    ) -> tuple[str, list[moving.Planned]]:
        """The file's source (as given, or guessed) and its planned items."""
        try:
            size = path.stat().st_size
            if size > moving.max_bytes():
                raise moving.ImportRefused(
                    f"{path} is larger than {moving.max_bytes() // 2**20} MB "
                    "(IMPORT_MAX_BYTES)."
                )
            # Read inside the try: a directory, or a file the user may not
            # read, fails here, not at stat(), and ended in a traceback.
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}.") from None
        source = source or moving.guess_source(path.name, data)
        return source, moving.read(source, data=data, filename=path.name)

    def _reading(self, done: int, total: int) -> None:
        of = f" of {total:,}" if total else ""
        self.stderr.write(f"Read {done:,}{of} watches")

    def _progress(self, done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            self.stderr.write(f"{done}/{total}")

    def _line(self, item: dict[str, Any]) -> None:
        result = item["result"]
        if result is None:
            if not item["imported"]:
                result = "not imported"
            else:
                result = "duplicate" if item["duplicate"] else "would create"
        words = f"{result:>13}  {item['name']}"
        if item.get("reason"):
            words += f" — {item['reason']}"
        if item.get("error"):
            words += f" — {item['error']}"
        self.stdout.write(words)
        for channel in item["channels"]:
            self.stdout.write(f"{'':>15}→ tells channel “{channel}”")
        for note in item["notes"]:
            self.stdout.write(f"{'':>15}· {note}")
