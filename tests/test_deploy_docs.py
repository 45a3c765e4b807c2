"""docs/deploy.md, the production layout as systemd units: read as systemd
would read it, it must start what README's production section asks for, with
the flags and stop behaviour the workers need, and only variables that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from django.conf import settings

from tests.test_settings import readme_configuration_names

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "deploy.md").read_text()


def units() -> dict[str, dict[str, str]]:
    """{unit file name: {key: value}} of each ```ini block the doc names."""
    found = re.findall(
        r"`/etc/systemd/system/(pagewatch-[\w@-]+\.service)`.*?```ini\n(.*?)```",
        DOC,
        re.S,
    )
    return {
        name: dict(
            line.split("=", 1)
            for line in body.splitlines()
            if "=" in line and not line.startswith("#")
        )
        for name, body in found
    }


def command(unit: dict[str, str]) -> list[str]:
    # systemd reads %% as one %, and %h alone as the user's home directory.
    return shlex.split(unit["ExecStart"].replace("%%", "%"))


def workers() -> dict[str, list[str]]:
    return {
        name: command(unit)
        for name, unit in units().items()
        if command(unit)[1:4] == ["-A", "config", "worker"]
    }


def test_the_doc_has_web_beat_and_a_worker_for_each_part() -> None:
    assert set(units()) == {
        "pagewatch-web.service",
        "pagewatch-worker@.service",
        "pagewatch-notify.service",
        "pagewatch-upkeep.service",
        "pagewatch-browser.service",
        "pagewatch-beat.service",
    }
    web = command(units()["pagewatch-web.service"])
    assert web[1:4] == ["config.wsgi", "--config", "python:config.gunicorn"]
    beats = [
        n for n, u in units().items() if command(u)[1:4] == ["-A", "config", "beat"]
    ]
    assert beats == ["pagewatch-beat.service"]


def test_every_worker_rides_out_a_redis_outage_and_is_stopped_by_its_main_process() -> (
    None
):
    assert len(workers()) == 4
    for name, argv in workers().items():
        assert {"--without-gossip", "--without-mingle", "--without-heartbeat"} <= set(
            argv
        ), name
        assert units()[name]["KillMode"] == "mixed", name
        assert units()[name]["Restart"] == "always", name


def test_the_workers_serve_every_queue_a_task_is_routed_to() -> None:
    served = set()
    for argv in workers().values():
        [queues] = [a.split("=", 1)[1] for a in argv if a.startswith("--queues=")]
        served |= set(queues.split(","))

    routed = {route["queue"] for route in settings.CELERY_TASK_ROUTES.values()}
    declared = {queue.name for queue in settings.CELERY_TASK_QUEUES}
    assert routed | declared | {settings.CELERY_TASK_DEFAULT_QUEUE} <= served


def test_no_celery_hostname_is_left_for_systemd_to_expand() -> None:
    """%h is systemd's specifier for the home directory: a unit must write
    Celery's %h as %%h."""
    for name, unit in units().items():
        assert not re.search(r"(?<!%)%h", unit["ExecStart"]), name
        hostnames = [a for a in command(unit) if a.startswith("--hostname=")]
        assert all(h.endswith("@%h") for h in hostnames), name


def test_the_environment_file_sets_only_variables_the_readme_documents() -> None:
    block = DOC.split("`/etc/pagewatch/env`", 1)[1].split("```sh\n", 1)[1]
    names = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", block.split("```", 1)[0], re.M))
    settings_source = (ROOT / "config" / "settings.py").read_text()
    from_files = set(re.findall(r"env_secret\(\s*\"([A-Z0-9_]+)\"", settings_source))
    documented = readme_configuration_names() | {f"{n}_FILE" for n in from_files}

    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY_FILE"} <= names
    assert sorted(names - documented) == []


def test_the_var_dir_made_before_the_first_unit_is_the_units_state_directory() -> None:
    """migrate runs before any unit has made the state directory, and every
    process stops when it cannot make PAGEWATCH_VAR_DIR."""
    var_dir = Path(re.search(r"^PAGEWATCH_VAR_DIR=(\S+)$", DOC, re.M)[1])

    assert f"install -d -o pagewatch -g pagewatch -m 0700 {var_dir}\n" in DOC
    assert var_dir.parent == Path("/var/lib")  # where StateDirectory= makes it
    for name, unit in units().items():
        assert (unit["StateDirectory"], unit["StateDirectoryMode"]) == (
            var_dir.name,
            "0700",
        ), name
