"""Settings read from the environment, checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.valkey import embedded_valkey
from tests.worker_mail import SEND_ONE

ROOT = Path(__file__).resolve().parent.parent


def database_options(**env: str) -> dict:
    """DATABASES["default"]["OPTIONS"] as a fresh process sees them."""
    code = (
        "import json, django; from django.conf import settings; django.setup();"
        "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {})))"
    )
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PAGEWATCH_VAR_DIR": str(ROOT / "var"),
        **env,
    }
    if "DATABASE_SERVER_SIDE_BINDING" not in env:  # the default, not the caller's
        environment.pop("DATABASE_SERVER_SIDE_BINDING", None)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("setting", "expected"), [(None, True), ("false", False), ("true", True)]
)
def test_postgresql_binds_parameters_on_the_server_unless_turned_off(
    setting: str | None, expected: bool
) -> None:
    env = {"DATABASE_URL": "postgres://pagewatch@127.0.0.1:5432/pagewatch"}
    if setting is not None:
        env["DATABASE_SERVER_SIDE_BINDING"] = setting

    options = database_options(**env)

    assert options["server_side_binding"] is expected


def test_sqlite_gets_its_own_options_and_no_server_side_binding() -> None:
    options = database_options(DATABASE_URL="sqlite:///var/settings-test.sqlite3")

    assert "server_side_binding" not in options
    assert options["transaction_mode"] == "IMMEDIATE"


def test_options_in_the_database_url_are_kept_beside_ours() -> None:
    options = database_options(
        DATABASE_URL="postgres://pagewatch@db.example:5432/pagewatch?sslmode=require"
    )

    assert options["sslmode"] == "require"  # lost before: ours replaced them
    assert options["server_side_binding"] is True
    assert options["connect_timeout"] == 5


def test_a_connect_timeout_in_the_database_url_wins_over_ours() -> None:
    options = database_options(
        DATABASE_URL="postgres://pagewatch@db.example/pagewatch?connect_timeout=9"
    )

    assert options["connect_timeout"] == 9


def test_every_environment_variable_the_settings_read_is_in_the_readme() -> None:
    """settings.py reads the environment only through config.env's readers;
    each name they are given has a row in the README's configuration table
    (gunicorn's settings, config/gunicorn.py, too)."""
    import re

    source = "".join(
        (ROOT / "config" / name).read_text() for name in ("settings.py", "gunicorn.py")
    )
    names = set(re.findall(r"\benv_\w+\(\s*\"([A-Z0-9_]+)\"", source))
    readme = (ROOT / "README.md").read_text()
    assert len(names) > 20  # the pattern still finds them
    assert sorted(n for n in names if f"`{n}`" not in readme) == []


def test_every_variable_the_readme_documents_is_read() -> None:
    """The other way round: each row of the README's configuration table names
    variables that settings, gunicorn, the Procfile or the Makefile read."""
    import re

    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    documented = {
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])
    }
    source = "".join(
        (ROOT / name).read_text()
        for name in (
            "config/settings.py",
            "config/gunicorn.py",
            "Procfile",
            "Procfile.large",
            "Makefile",
        )  # fmt: skip
    )
    read = set(re.findall(r"\benv_\w+\(\s*\"([A-Z0-9_]+)\"", source))
    read |= set(re.findall(r"\$\{([A-Z0-9_]+)", source))  # Procfile
    read |= set(re.findall(r"^([A-Z0-9_]+) \?=", source, re.MULTILINE))  # Makefile
    assert len(documented) > 20  # the table is still found
    assert sorted(documented - read) == []


def test_the_scheduler_keeps_its_state_under_var_wherever_it_starts(tmp_path):
    """The README's `celery -A config beat`, run from any directory, writes
    celerybeat-schedule under PAGEWATCH_VAR_DIR (it used to need --schedule)."""
    filename = fresh("settings.CELERY_BEAT_SCHEDULE_FILENAME", tmp_path)

    assert filename == str(tmp_path / "celerybeat-schedule")


def fresh(expression: str, tmp_path: Path, **env: str) -> object:
    """`expression` evaluated after django.setup() in a fresh process."""
    code = (
        "import json, django; from django.conf import settings; django.setup();"
        f"print(json.dumps({expression}))"
    )
    return json.loads(in_fresh_process(code, tmp_path, **env))


def in_fresh_process(code: str, tmp_path: Path, **env: str) -> str:
    """The last line `code` prints in a fresh interpreter with the embedded
    defaults (no REDIS_URL or DATABASE_URL) and its var/ under `tmp_path`."""
    environment = {
        k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")
    } | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PAGEWATCH_VAR_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def test_without_redis_everything_uses_the_embedded_valkey_under_var(tmp_path):
    broker, cache = fresh(
        "[settings.CELERY_BROKER_URL, settings.CACHES['default']]", tmp_path
    )

    assert broker == f"redis+socket://{tmp_path}/valkey.sock?virtual_host=0"
    assert cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert cache["LOCATION"] == f"unix://{tmp_path}/valkey.sock?db=0"


def test_a_redis_url_naming_a_unix_socket_reaches_celery_in_its_spelling(tmp_path):
    broker = fresh(
        "settings.CELERY_BROKER_URL",
        tmp_path,
        REDIS_URL="unix:///run/redis/redis.sock?db=3",
        SECRET_KEY="k" * 50,
    )

    assert broker == "redis+socket:///run/redis/redis.sock?virtual_host=3"


def test_upkeep_and_notify_tasks_have_queues_of_their_own(tmp_path):
    routes = fresh("settings.CELERY_TASK_ROUTES", tmp_path)

    assert routes == {
        task: {"queue": "upkeep"}
        for task in (
            "checks.tasks.dispatch_due_monitors_task",
            "checks.tasks.fail_stale_checks_task",
            "checks.notify.tasks.sweep_deliveries_task",
            "checks.notify.tasks.queue_digests_task",
        )
    } | {
        "checks.notify.tasks.deliver_task": {"queue": "notifications"},
        "checks.notify.tasks.drain_task": {"queue": "notifications"},
        "teams.tasks.send_password_reset_task": {"queue": "notifications"},
    }


def test_a_worker_without_concurrency_runs_worker_processes_of_them(tmp_path):
    from config.celery import app

    default = fresh("settings.CELERY_WORKER_CONCURRENCY", tmp_path)
    chosen = fresh("settings.CELERY_WORKER_CONCURRENCY", tmp_path, WORKER_PROCESSES="3")

    assert default == os.cpu_count()
    assert chosen == 3
    # Celery reads it under the name its worker asks for.
    assert app.conf.worker_concurrency == default


def test_a_pdfs_ocr_ends_a_minute_before_its_checks_time_limit(tmp_path):
    default = fresh("settings.OCR_PDF_SECONDS", tmp_path)
    short = fresh(
        "settings.OCR_PDF_SECONDS",
        tmp_path,
        OCR_PDF_SECONDS="600",
        CHECK_TIME_LIMIT_SECONDS="300",
    )

    assert default == 300
    assert short == 240


def test_all_of_a_check_tasks_ocr_ends_a_minute_before_its_time_limit(tmp_path):
    default = fresh("settings.OCR_CHECK_SECONDS", tmp_path)
    short = fresh(
        "settings.OCR_CHECK_SECONDS", tmp_path, CHECK_TIME_LIMIT_SECONDS="300"
    )
    shortest = fresh(
        "settings.OCR_CHECK_SECONDS", tmp_path, CHECK_TIME_LIMIT_SECONDS="30"
    )

    assert default == 840
    assert short == 240
    assert shortest == 10  # still before the soft limit, 15 s


@pytest.mark.parametrize(("stale", "every"), [("120", 15.0), ("15", 5.0)])
def test_the_stale_check_sweep_runs_every_eighth_of_the_stale_time(
    tmp_path, stale, every
):
    schedule = fresh(
        "settings.CELERY_BEAT_SCHEDULE['fail-stale-checks']['schedule']",
        tmp_path,
        CHECK_STALE_AFTER_SECONDS=stale,
    )

    assert schedule == every


def gunicorn_settings(**env: str) -> list[object]:
    code = (
        "import json, config.gunicorn as g;"
        "print(json.dumps([g.worker_class, g.workers, g.threads, g.preload_app]))"
    )
    environment = {
        k: v for k, v in os.environ.items() if k not in ("WEB_WORKERS", "WEB_THREADS")
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=environment | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_gunicorn_runs_sync_workers_sized_from_the_cpus_and_shares_the_app() -> None:
    cpus = os.cpu_count() or 1

    assert gunicorn_settings() == ["sync", cpus + 1, 1, True]
    assert gunicorn_settings(WEB_WORKERS="3", WEB_THREADS="4") == [
        "gthread",
        3,
        4,
        True,
    ]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SEARCH_PROVIDER": "bing"}, "SEARCH_PROVIDER must be one of searxng"),
        ({"SEARCH_PROVIDER": "brave"}, "SEARCH_PROVIDER=brave needs BRAVE_API_KEY"),
        ({"SEARXNG_URL": "searx:8080"}, "SEARXNG_URL must start with http://"),
    ],
)
def test_a_search_provider_set_wrong_stops_the_process_at_start(env, message) -> None:
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SEARCH_", "SEARXNG_", "BRAVE_", "TAVILY_", "FIRECRAWL_"))
    }
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env={
            **environment,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PAGEWATCH_VAR_DIR": str(ROOT / "var"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert message in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["manage.py", "check"],
        ["-m", "celery", "-A", "config", "worker"],
        [
            *("-m", "gunicorn", "config.wsgi", "--config", "python:config.gunicorn"),
            *("--bind", "127.0.0.1:0"),
        ],
    ],
)
def test_a_misconfiguration_stops_every_process_with_one_line_naming_it(
    tmp_path, command
) -> None:
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env={**os.environ, "PAGEWATCH_VAR_DIR": str(tmp_path), "DEBUG": "maybe"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "Configuration error: DEBUG must be true or false, got 'maybe'"
    ]


@pytest.mark.parametrize(
    "command",
    [["manage.py", "check"], ["-m", "celery", "-A", "config", "worker"]],
)
def test_an_email_backend_that_cannot_be_loaded_stops_the_process_with_one_line(
    tmp_path, command
) -> None:
    """Django loads it only when a message is sent: a typo sent no e-mail at
    all and said so only in the log, once per message."""
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        env={
            **os.environ,
            "PAGEWATCH_VAR_DIR": str(tmp_path),
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBacken",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "Configuration error: EMAIL_BACKEND must name an e-mail backend class, got"
        " 'django.core.mail.backends.smtp.EmailBacken': Module"
        ' "django.core.mail.backends.smtp" does not define a "EmailBacken"'
        " attribute/class"
    ]


def settings_process(tmp_path: Path, code: str, **env: str):
    """A fresh interpreter that sets Django up with only `env`'s secret key."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "SECRET_KEY_FILE", "REDIS_URL", "DATABASE_URL")
    }
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={
            **environment,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PAGEWATCH_VAR_DIR": str(tmp_path),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_with_redis_the_secret_key_must_be_given_not_made_per_machine(tmp_path):
    done = settings_process(tmp_path, "", REDIS_URL="redis://127.0.0.1:6379/11")

    assert done.returncode == 1
    assert "SECRET_KEY (or SECRET_KEY_FILE) must be set when REDIS_URL is" in (
        done.stderr
    )
    assert not (tmp_path / "secret_key").exists()


def test_with_redis_a_secret_key_file_is_used(tmp_path):
    key = "k" * 30 + "-shared-by-every-machine-of-the-site"
    (tmp_path / "key").write_text(key + "\n")

    done = settings_process(
        tmp_path,
        "from django.conf import settings; print(settings.SECRET_KEY)",
        REDIS_URL="redis://127.0.0.1:6379/11",
        SECRET_KEY_FILE=str(tmp_path / "key"),
    )

    assert done.stdout.strip().splitlines()[-1] == key


@pytest.mark.parametrize("key", ["change-me", "x" * 49])
def test_a_secret_key_shorter_than_django_asks_is_refused(tmp_path, key):
    done = settings_process(tmp_path, "", SECRET_KEY=key)

    assert done.returncode == 1
    assert f"SECRET_KEY must be at least 50 characters, got {len(key)}" in done.stderr


def test_without_redis_a_key_is_made_once_and_kept_under_var(tmp_path):
    code = "from django.conf import settings; print(settings.SECRET_KEY)"

    first = settings_process(tmp_path, code).stdout.strip().splitlines()[-1]
    again = settings_process(tmp_path, code).stdout.strip().splitlines()[-1]

    assert len(first) >= 50
    assert again == first == (tmp_path / "secret_key").read_text()


def test_hsts_is_off_unless_asked_for(tmp_path):
    assert fresh("settings.SECURE_HSTS_SECONDS", tmp_path) == 0
    assert fresh("settings.SECURE_HSTS_SECONDS", tmp_path, HSTS_SECONDS="31536000") == (
        31536000
    )


def test_cookies_are_secure_by_default_when_the_public_address_is_https(tmp_path):
    """An operator who serves Pagewatch over HTTPS but forgot SECURE_COOKIES
    had the session cookie sent over any plain-http request to the host too
    (a link, an image, a captive portal), for whoever listens to read."""
    both = "[settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE]"
    https = {"PUBLIC_BASE_URL": "https://pagewatch.example.org"}

    assert fresh(both, tmp_path, **https) == [True, True]
    assert fresh(both, tmp_path, PUBLIC_BASE_URL="http://127.0.0.1:8000") == [
        False,
        False,
    ]
    assert fresh(both, tmp_path, SECURE_COOKIES="false", **https) == [False, False]
    assert fresh(both, tmp_path, SECURE_COOKIES="true") == [True, True]


def test_next_links_start_at_the_public_address_only_when_the_operator_set_it(
    tmp_path,
):
    flag = "settings.PUBLIC_BASE_URL_SET"
    made_run = {"PUBLIC_BASE_URL_FILLED_IN": "true"}

    assert fresh(flag, tmp_path, PUBLIC_BASE_URL="https://pw.example") is True
    assert fresh(flag, tmp_path, PUBLIC_BASE_URL="http://0.0.0.0:8000", **made_run) is (
        False
    )


def test_var_and_the_secret_key_are_made_for_this_user_alone(tmp_path):
    var = tmp_path / "var"

    fresh("settings.SECRET_KEY", tmp_path, PAGEWATCH_VAR_DIR=str(var), SECRET_KEY="")

    assert var.stat().st_mode & 0o777 == 0o700
    assert (var / "secret_key").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "password", ["20260516123456", "olive@example.com", "password123", "short1!"]
)
def test_a_new_password_must_not_be_all_digits_common_short_or_like_the_user(
    django_user_model, password
):
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    user = django_user_model(username="olive", email="olive@example.com")

    with pytest.raises(ValidationError):
        validate_password(password, user)


def test_an_e_mail_written_by_a_worker_is_one_info_record_not_a_warning(tmp_path):
    """make run's e-mail backend writes each e-mail to the log (config.mail).
    Printed, Celery logged it line by line at WARNING (a soak of 40 monitors:
    90 % of the log, and every WARNING but one), each line prefixed."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "DATABASE_URL", "EMAIL_BACKEND", "LOG_LEVEL")
    } | {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PAGEWATCH_VAR_DIR": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
    }
    log = tmp_path / "worker.log"
    with embedded_valkey(tmp_path):
        with log.open("wb") as out:
            worker = subprocess.Popen(  # noqa: S603 - our own interpreter
                [
                    sys.executable, "-m", "celery", "-A", "config", "worker",
                    "-I", "tests.worker_mail", "--concurrency=1", "--loglevel=INFO",
                    "--without-gossip", "--without-mingle", "--without-heartbeat",
                ],
                cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        try:
            wait_until(lambda: "ready." in log.read_text(), log)
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "from config.celery import app;"
                    f"app.send_task({SEND_ONE!r}, args=['Hello from the worker'])",
                ],
                cwd=ROOT,
                env=environment,
                timeout=60,
                check=True,
            )
            wait_until(lambda: "Subject: Hello from the worker" in log.read_text(), log)
        finally:
            worker.terminate()  # the main process alone, as make run stops it
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait(timeout=10)

    text = log.read_text()
    assert " INFO pagewatch.mail E-mail to someone@example.com" in text
    assert "\nSubject: Hello from the worker\n" in text
    assert "\nThe body of the message.\n" in text
    assert "WARNING" not in text


def wait_until(condition: Callable[[], bool], log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out; the worker said:\n{log.read_text()}")
        time.sleep(0.1)


def test_a_var_dir_that_cannot_be_made_stops_manage_py_with_one_line(tmp_path):
    """It ended in a NotADirectoryError/PermissionError traceback from the
    settings module, above the one line an operator needs."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    var_dir = blocker / "var"

    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "PAGEWATCH_VAR_DIR": str(var_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"Configuration error: PAGEWATCH_VAR_DIR: cannot create {var_dir} "
        "(Not a directory); make it writable by this user or point "
        "PAGEWATCH_VAR_DIR elsewhere"
    ]
    assert not var_dir.exists()


def readme_configuration_names() -> set[str]:
    import re

    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    return {
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])
    }


def test_env_example_lists_exactly_the_variables_the_readme_documents() -> None:
    """.env.example is where a self-hoster starts: no variable the README
    documents is missing from it, and none it lists is unknown. (Its values
    are examples, not always the defaults, so they are not compared.)"""
    import re

    example = (ROOT / ".env.example").read_text()
    listed = set(re.findall(r"^#\s*([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))

    assert sorted(readme_configuration_names() ^ listed) == []


def test_the_variables_make_runs_manager_reads_are_in_the_readme() -> None:
    """config/run.py and config/valkey.py read the environment without
    config.env's readers (they run before Django is set up)."""
    import re

    source = "".join(
        (ROOT / "config" / name).read_text() for name in ("run.py", "valkey.py")
    )
    read = set(re.findall(r"\benv\.get\(\s*\"([A-Z0-9_]+)\"", source))

    assert {"HOST", "PORT", "REDIS_URL"} <= read  # the pattern still finds them
    assert sorted(read - readme_configuration_names()) == []


def test_a_check_time_limit_past_the_brokers_visibility_timeout_is_refused(
    tmp_path,
):
    """The README says the limit must stay below the visibility timeout (a
    live check would be handed to a second worker); nothing enforced it."""
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={
            **os.environ,
            "PAGEWATCH_VAR_DIR": str(tmp_path),
            "CHECK_TIME_LIMIT_SECONDS": "3600",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "Configuration error: CHECK_TIME_LIMIT_SECONDS must be below 3600 (the "
        "broker's visibility timeout, after which a running check would be "
        "handed to a second worker), got 3600"
    ]
    assert (
        fresh(
            "settings.CELERY_TASK_TIME_LIMIT", tmp_path, CHECK_TIME_LIMIT_SECONDS="3599"
        )
        == 3599
    )


def test_a_var_dir_this_process_cannot_write_is_one_line_naming_it(tmp_path):
    """A fresh var/ that cannot take the generated secret key ended in a
    traceback. Made read-only with a read-only bind mount in a mount namespace
    of its own (root ignores file modes), where the platform allows one."""
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    script = (
        f"mount --bind {var_dir} {var_dir} && "
        f"mount -o remount,ro,bind {var_dir} && "
        f"exec {sys.executable} manage.py check"
    )
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "SECRET_KEY_FILE", "REDIS_URL")
    } | {"PAGEWATCH_VAR_DIR": str(var_dir)}
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if "mount" in done.stderr and "Configuration error" not in done.stderr:
        pytest.skip(f"no read-only bind mount here: {done.stderr.strip()}")

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"Configuration error: PAGEWATCH_VAR_DIR: cannot write "
        f"{var_dir}/secret_key (Read-only file system); make {var_dir} writable "
        "by this user or point PAGEWATCH_VAR_DIR elsewhere"
    ]


def test_a_full_disk_at_the_first_start_is_one_line_and_leaves_no_empty_key(
    tmp_path,
):
    """The key's file was made, then its write failed: a traceback, and an
    empty var/secret_key that every later start took for the key, so every
    sign-in failed. A tmpfs of one page, filled, in a mount namespace of its
    own, where the platform allows one."""
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    script = (
        f"mount -t tmpfs -o size=4k tmpfs {var_dir} && "
        f"(dd if=/dev/zero of={var_dir}/filler bs=4k 2>/dev/null; true) && "
        f"{sys.executable} manage.py check; echo exit=$?; ls -A {var_dir}"
    )
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "SECRET_KEY_FILE", "REDIS_URL")
    } | {"PAGEWATCH_VAR_DIR": str(var_dir)}
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if "mount" in done.stderr and "Configuration error" not in done.stderr:
        pytest.skip(f"no tmpfs mount here: {done.stderr.strip()}")

    assert done.stderr.strip().splitlines() == [
        f"Configuration error: PAGEWATCH_VAR_DIR: cannot write "
        f"{var_dir}/secret_key (No space left on device); free space on its disk "
        "or point PAGEWATCH_VAR_DIR elsewhere"
    ]
    assert done.stdout.split() == ["exit=1", "filler"]


def test_an_empty_kept_secret_key_stops_the_process_with_one_line(tmp_path):
    """Django refuses an empty key only when a request first signs something,
    so the web started and every sign-in failed."""
    (tmp_path / "secret_key").write_text("\n")

    done = settings_process(tmp_path, "")

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"Configuration error: {tmp_path}/secret_key is empty; nothing can have "
        "been signed with it, so delete it and start again to make a new one"
    ]


def test_a_database_that_refuses_stops_manage_py_with_one_line_without_its_password(
    tmp_path,
):
    """`make run` and every deploy start with `manage.py migrate`: a database
    down, unreachable or out of disk was a traceback through Django."""
    pytest.importorskip("psycopg")
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env={
            **os.environ,
            "PAGEWATCH_VAR_DIR": str(tmp_path),
            "DATABASE_URL": "postgres://pagewatch:hunter2@127.0.0.1:1/pagewatch",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("Database error: connection failed: ")
    assert "127.0.0.1" in line and "Connection refused" in line
    assert "hunter2" not in done.stderr


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"LOG_LEVEL": "verbose"},
            "LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL,"
            " got 'verbose'",
        ),
        (
            {"CELERY_TASK_LOG_LEVEL": "loud"},
            "CELERY_TASK_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR,"
            " CRITICAL, got 'loud'",
        ),
        (
            {"API_RATE_LIMIT": "lots"},
            "API_RATE_LIMIT must be requests per second, minute, hour or day,"
            " like 600/min, got 'lots'",
        ),
        (
            {"PUBLIC_BASE_URL": "pagewatch.example.com"},
            "PUBLIC_BASE_URL must start with http:// or https://,"
            " got 'pagewatch.example.com'",
        ),
        (
            {"PUBLIC_BASE_URL": "https://intranet.example/monitors/watch"},
            "PUBLIC_BASE_URL's path cannot start with /monitors, which is one of"
            " Pagewatch's own addresses; choose another, like /pagewatch,"
            " got 'https://intranet.example/monitors/watch'",
        ),
        (
            {"SLACK_API_URL": "slack.internal/api"},
            "SLACK_API_URL must start with http:// or https://,"
            " got 'slack.internal/api'",
        ),
    ],
)
def test_a_log_level_rate_or_base_url_set_wrong_stops_the_process_with_one_line(
    tmp_path, env, line
) -> None:
    done = settings_process(tmp_path, "", **env)

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"Configuration error: {line}"]


_KEY = "k" * 60


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"DATABASE_URL": "db.internal:5432/pagewatch"},
            "DATABASE_URL must be postgres://user:password@host:5432/name or"
            " sqlite:///path, got an address without a scheme",
        ),
        (
            {"DATABASE_URL": "mysql://pagewatch:hunter2@db/pagewatch"},
            "DATABASE_URL must be postgres://user:password@host:5432/name or"
            " sqlite:///path, got a mysql:// address",
        ),
        (
            {"DATABASE_URL": "postgres://pagewatch:hun/ter2@db:5432/pagewatch"},
            "DATABASE_URL has a port that is not a number (characters such as"
            " @ : / in the password must be percent-encoded)",
        ),
        (
            {"REDIS_URL": "redis.internal:6379", "SECRET_KEY": _KEY},
            "REDIS_URL must be redis://host:6379/0, rediss://… or"
            " unix:///path/to/redis.sock, got no scheme",
        ),
        (
            {"REDIS_URL": "http://:hunter2@redis.internal:6379", "SECRET_KEY": _KEY},
            "REDIS_URL must be redis://host:6379/0, rediss://… or"
            " unix:///path/to/redis.sock, got a http:// address",
        ),
    ],
)
def test_a_database_or_redis_address_set_wrong_is_one_line_without_its_password(
    tmp_path, env, line
) -> None:
    """Not a traceback from dj_database_url, nor a worker retrying an AMQP
    host called `redis.internal:6379` for ever; and the line never repeats
    the address, which holds the password."""
    done = settings_process(tmp_path, "", **env)

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"Configuration error: {line}"]
    assert "hunter2" not in done.stderr


def test_an_empty_database_url_means_the_embedded_database(tmp_path) -> None:
    done = settings_process(
        tmp_path,
        "from django.conf import settings as s; print(s.DATABASES['default']['NAME'])",
        DATABASE_URL="",
    )

    assert done.stdout.strip() == str(tmp_path / "pagewatch.sqlite3")


WORKER_ROOT_LEVEL = (
    "import logging; from config.celery import app;"
    " app.log.setup_logging_subsystem(loglevel='INFO');"
    " print(logging.getLogger().level)"
)


@pytest.mark.parametrize(("log_level", "root"), [("debug", "10"), ("WARNING", "30")])
def test_log_level_sets_the_root_level_of_workers_over_their_loglevel_flag(
    tmp_path, log_level, root
) -> None:
    """The Procfiles and the units start workers and beat with
    --loglevel=INFO, which Celery applies after Django's logging setup."""
    done = settings_process(tmp_path, WORKER_ROOT_LEVEL, LOG_LEVEL=log_level)

    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == root


def test_without_log_level_a_workers_loglevel_flag_stands(tmp_path) -> None:
    done = settings_process(tmp_path, WORKER_ROOT_LEVEL, LOG_LEVEL="")

    assert done.stdout.split()[-1] == "20"


def test_log_levels_and_the_rate_are_taken_in_any_case(tmp_path) -> None:
    done = settings_process(
        tmp_path,
        "from django.conf import settings as s; import logging;"
        "print(logging.getLogger().level, logging.getLogger('celery.app.trace').level,"
        " s.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']['api_key'])",
        LOG_LEVEL="debug",
        CELERY_TASK_LOG_LEVEL="Info",
        API_RATE_LIMIT="100/hour",
    )

    assert done.stdout.split() == ["10", "20", "100/hour"]


def test_the_production_settings_leave_only_the_deploy_warnings_the_readme_names(
    tmp_path,
) -> None:
    """README, Running in production: `manage.py check --deploy` with the
    production environment reports security.W008, W005 and W021, each
    expected, and nothing else (an unexpected warning there teaches operators
    to ignore the list)."""
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "SECRET_KEY_FILE", "REDIS_URL", "DATABASE_URL")
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env={
            **environment,
            "PAGEWATCH_VAR_DIR": str(tmp_path),
            "SECRET_KEY": "s" * 30 + "-the-same-on-every-machine-0123",
            "REDIS_URL": "redis://127.0.0.1:6379/15",
            "TRUST_PROXY_HEADERS": "true",
            "SECURE_COOKIES": "true",
            "HSTS_SECONDS": "31536000",
            "ALLOWED_HOSTS": "pagewatch.example.com",
            "CSRF_TRUSTED_ORIGINS": "https://pagewatch.example.com",
            "PUBLIC_BASE_URL": "https://pagewatch.example.com",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    import re

    warned = re.findall(r"^\?: \(([\w.]+)\)", done.stdout + done.stderr, re.M)
    assert sorted(warned) == ["security.W005", "security.W008", "security.W021"]


def test_the_readme_names_exactly_the_secrets_that_may_be_given_as_files() -> None:
    """METRICS_TOKEN and EMAIL_HOST_PASSWORD were read from NAME_FILE without
    the README saying so, while "Secrets may also be given as NAME_FILE" left
    the operator to guess which variables were secrets."""
    import re

    source = (ROOT / "config" / "settings.py").read_text()
    from_files = set(re.findall(r"\benv_secret\(\s*\"([A-Z0-9_]+)\"", source))
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Configuration", 1)[1].split("\n| Variable", 1)[0]
    sentence = table.split("The\nsecrets (", 1)[1].split(")", 1)[0]
    named = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", sentence))

    assert len(from_files) > 5  # the pattern still finds them
    assert named == from_files


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("lots", "LLM_MONTHLY_TOKENS_PER_TEAM must be a whole number, got 'lots'"),
        ("1.5M", "LLM_MONTHLY_TOKENS_PER_TEAM must be a whole number, got '1.5M'"),
        ("0", "LLM_MONTHLY_TOKENS_PER_TEAM must be at least 1, got 0"),
        ("-5", "LLM_MONTHLY_TOKENS_PER_TEAM must be at least 1, got -5"),
    ],
)
def test_a_monthly_ai_allowance_that_is_no_count_stops_the_process_at_start(
    tmp_path, value, message
) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={
            **os.environ,
            "PAGEWATCH_VAR_DIR": str(tmp_path),
            "LLM_MONTHLY_TOKENS_PER_TEAM": value,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"Configuration error: {message}"]


@pytest.mark.parametrize(("value", "limit"), [("", None), ("2000000", 2_000_000)])
def test_a_monthly_ai_allowance_is_a_count_of_tokens_or_none(
    monkeypatch, value, limit
) -> None:
    from config.env import env_optional_int

    monkeypatch.setenv("LLM_MONTHLY_TOKENS_PER_TEAM", value)

    assert env_optional_int("LLM_MONTHLY_TOKENS_PER_TEAM", minimum=1) == limit
