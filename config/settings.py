"""Pagewatch settings. Every value that varies per deployment comes from the
environment through the strict helpers in config.env and is documented in the
README's configuration table and in .env.example.

One module over 500 lines on purpose: Django reads its settings from one
module, and one flat list, in the order the README documents it, is easier to
check against the environment than settings spread over files."""

from __future__ import annotations

import errno
import os
import re
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.utils.csp import CSP
from kombu import Queue

from config import valkey
from config.env import (
    ConfigError,
    env_bool,
    env_database_url,
    env_int,
    env_list,
    env_log_level,
    env_optional_int,
    env_redis_url,
    env_secret,
    env_str,
    env_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("PAGEWATCH_VAR_DIR", str(BASE_DIR / "var"))).resolve()
# Only this user may enter: the embedded database (password hashes, sessions,
# webhook secrets), the secret key and the embedded Valkey's data live here.
# A directory that cannot be made is one line naming the variable, not a
# traceback (nor is one that cannot be written: see _secret_key).
try:
    VAR_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
except OSError as exc:
    raise ConfigError(
        f"PAGEWATCH_VAR_DIR: cannot create {VAR_DIR} ({exc.strerror}); "
        "make it writable by this user or point PAGEWATCH_VAR_DIR elsewhere"
    ) from None


_MAKE_KEY = "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"


def _secret_key() -> str:
    """An explicit SECRET_KEY wins; otherwise one is generated once and kept
    under var/ so a fresh `make run` works and sessions survive restarts.

    Only for one machine, though: with Redis the processes may run on
    several, and each would make its own key, so a worker's unsubscribe
    links, one web host's sessions and signed capture links would all fail
    on another. The key signs sessions and password-reset links, so a short
    one (the example's `change-me`) is refused like a missing one."""
    configured = env_secret("SECRET_KEY")
    if configured and len(configured) < 50:
        raise ConfigError(
            f"SECRET_KEY must be at least 50 characters, got {len(configured)}; "
            f"make one with {_MAKE_KEY}"
        )
    if configured:
        return configured
    if env_str("REDIS_URL"):
        raise ConfigError(
            "SECRET_KEY (or SECRET_KEY_FILE) must be set when REDIS_URL is: "
            "every web and worker machine must sign with the same key. Make one "
            f"with {_MAKE_KEY} (or reuse the content of var/secret_key)"
        )
    path = VAR_DIR / "secret_key"
    try:
        # Created readable by this user only from the start, never for a
        # moment by everyone; and only once, if two processes start together.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as file:
                file.write(secrets.token_urlsafe(50))
        except OSError:
            # A full disk: no empty key left behind for the next start to use.
            path.unlink(missing_ok=True)
            raise
    except FileExistsError:
        pass
    except OSError as exc:  # a var/ this user may not write to, or a full disk
        fix = (
            "free space on its disk"
            if exc.errno == errno.ENOSPC
            else f"make {VAR_DIR} writable by this user"
        )
        raise ConfigError(
            f"PAGEWATCH_VAR_DIR: cannot write {path} ({exc.strerror}); {fix} "
            "or point PAGEWATCH_VAR_DIR elsewhere"
        ) from None
    key = path.read_text().strip()
    if not key:
        # Django refuses an empty key only when a request first signs
        # something: every sign-in would fail, not the start.
        raise ConfigError(
            f"{path} is empty; nothing can have been signed with it, so delete "
            "it and start again to make a new one"
        )
    return key


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
CSRF_FAILURE_VIEW = "config.views.csrf_failure"  # templates/403_csrf.html, marked
PUBLIC_BASE_URL = env_url("PUBLIC_BASE_URL", "http://127.0.0.1:8000")
# Whether the operator named the address clients use: the API's next links
# start there only then. The default, and the http://HOST:PORT `make run` fills
# in (and says so), may be no address a client elsewhere can reach.
PUBLIC_BASE_URL_SET = bool(os.environ.get("PUBLIC_BASE_URL", "").strip()) and not (
    env_bool("PUBLIC_BASE_URL_FILLED_IN", False)
)
# Served under a sub-path (https://intranet.example/pagewatch) when the public
# address has one: every link Django makes starts with it, whether the proxy
# strips it or passes it on (config.wsgi); links given out, monitors.links.
_public = urlsplit(PUBLIC_BASE_URL)
FORCE_SCRIPT_NAME = _public.path or None
if _public.query or _public.fragment:
    raise ConfigError(
        f"PUBLIC_BASE_URL must be an address without ? or #, got {PUBLIC_BASE_URL!r}"
    )
# The first segments of Pagewatch's own addresses (config.urls, and static
# files), which a sub-path may not start with: config.wsgi would take a
# stripped /monitors/monitors/… for one left whole and strip it again.
APP_ROUTES = frozenset(
    [
        "accounts",
        "activity",
        "admin",
        "captures",
        "channels",
        "email",
        "export",
        "favicon.ico",
        "feeds",
        "healthz",
        "history",
        "import",
        "invitations",
        "metrics",
        "monitors",
        "settings",
        "static",
        "team",
        "v2",
    ]
)
_first_segment = _public.path.strip("/").split("/")[0]
if _first_segment in APP_ROUTES:
    raise ConfigError(
        f"PUBLIC_BASE_URL's path cannot start with /{_first_segment}, which is"
        f" one of Pagewatch's own addresses; choose another, like /pagewatch,"
        f" got {PUBLIC_BASE_URL!r}"
    )
# The cookies belong to Pagewatch's own part of a shared host: /pagewatch, not
# /pagewatch/, so that the bare prefix has them too (RFC 6265 still keeps them
# from /pagewatchevil).
SESSION_COOKIE_PATH = CSRF_COOKIE_PATH = _public.path or "/"
# Only behind a proxy that sets these headers itself may they be believed.
TRUST_PROXY_HEADERS = env_bool("TRUST_PROXY_HEADERS", False)
USE_X_FORWARDED_HOST = TRUST_PROXY_HEADERS
if TRUST_PROXY_HEADERS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "monitors",
    "checks",
    "teams",
    # The second factor (teams.second_factor): authenticator apps (TOTP) and
    # single-use recovery codes.
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
]

MIDDLEWARE = [
    # /healthz and /metrics for probes that name a machine, not ALLOWED_HOSTS.
    "config.middleware.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.ApiTrailingSlashMiddleware",
    "config.middleware.NoStoreMiddleware",
    "config.middleware.CredentialAddressMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.SessionLimitsMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "teams.second_factor.SecondFactorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.middleware.NulInQueryMiddleware",
    # After sign-in and the second factor: only staff reach an admin view.
    "config.middleware.AdminSelectedIdsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "monitors.dashboard.context.team",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_database_url("DATABASE_URL", f"sqlite:///{VAR_DIR / 'pagewatch.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
# Options given in DATABASE_URL's query (`?sslmode=require`) come first.
_DB_OPTIONS = DATABASES["default"].setdefault("OPTIONS", {})
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL and a busy timeout let the web process, the worker and the scheduler
    # share the embedded database without "database is locked" errors.
    _DB_OPTIONS.setdefault("timeout", 20)
    _DB_OPTIONS.setdefault("transaction_mode", "IMMEDIATE")
    _DB_OPTIONS.setdefault(
        "init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )
elif DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # Parameters travel apart from the SQL (bytea in binary, not hex-escaped
    # into the statement): a batch of page results costs PostgreSQL about a
    # fifth less to parse and the worker less to build. Off for a pooler
    # that cannot handle the protocol-level parameters (some PgBouncer modes).
    _DB_OPTIONS["server_side_binding"] = env_bool("DATABASE_SERVER_SIDE_BINDING", True)
    # A database host that drops packets instead of refusing must cost a
    # request seconds (a 503), not hang it until gunicorn kills the worker.
    _DB_OPTIONS.setdefault("connect_timeout", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation."
        "UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sign-in throttling (django-axes), for the dashboard's and the admin's sign-in
# alike: after AXES_FAILURE_LIMIT failures within the cool-off, that user name
# is refused from that address (even with the right password) until the
# cool-off has passed since the last failure. Counted per name and address
# together, so a stranger hammering a name cannot lock its owner out
# everywhere; the address is the proxy's view of the client (config.signin).
# An administrator lifts a lockout in /admin/ (Access attempts) or with
# `manage.py axes_reset_username NAME`.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Single sign-on with OpenID Connect (teams.sso), on when OIDC_ISSUER is set:
# "Sign in with OIDC_PROVIDER_NAME" on the sign-in page. Accounts are made or
# found by the e-mail address the provider verified; OIDC_TEAMS_CLAIM names
# the claim whose "team-slug:role" entries give teams and roles.
OIDC_ISSUER = env_str("OIDC_ISSUER", "").strip().rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "").strip()
OIDC_CLIENT_SECRET = env_secret("OIDC_CLIENT_SECRET", "")
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on").strip()
OIDC_SCOPES = env_str("OIDC_SCOPES", "openid email profile").strip()
OIDC_TEAMS_CLAIM = env_str("OIDC_TEAMS_CLAIM", "").strip()
OIDC_DEFAULT_ROLE = env_str("OIDC_DEFAULT_ROLE", "viewer").strip()
OIDC_TIMEOUT_SECONDS = env_int("OIDC_TIMEOUT_SECONDS", 10, minimum=1)
# Off: the sign-in pages (the admin's too) offer single sign-on only.
PASSWORD_SIGNIN = env_bool("PASSWORD_SIGNIN", True)
if OIDC_ISSUER and not OIDC_ISSUER.startswith(("http://", "https://")):
    raise ConfigError(f"OIDC_ISSUER must start with https://, got {OIDC_ISSUER!r}")
if OIDC_ISSUER and not (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET):
    raise ConfigError(
        "OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are needed with OIDC_ISSUER"
    )
if OIDC_DEFAULT_ROLE not in ("owner", "editor", "viewer"):
    raise ConfigError(
        f"OIDC_DEFAULT_ROLE must be owner, editor or viewer, got {OIDC_DEFAULT_ROLE!r}"
    )
if not PASSWORD_SIGNIN and not OIDC_ISSUER:
    raise ConfigError("PASSWORD_SIGNIN=false needs single sign-on (OIDC_ISSUER)")
if OIDC_ISSUER:
    AUTHENTICATION_BACKENDS += ["teams.sso.Backend"]
# The name authenticator apps show beside the account.
OTP_TOTP_ISSUER = "Pagewatch"
# An authenticator's key (and its QR code) and the recovery codes are the
# person's second factor: whoever reads them in the admin can sign in as them.
# django-otp's admin then shows only when devices were made and last used.
OTP_ADMIN_HIDE_SENSITIVE_DATA = True
AXES_FAILURE_LIMIT = 10
# And from one address, whatever the names: this many failures within one
# window of the cool-off's length, counted by the clock (fixed windows, not
# since the last failure), refuse every password sign-in from it until that
# window ends (config.signin); a run that straddles two windows gets up to
# twice this less one, still far too few to spray. Well above one name's
# limit, so a few people mistyping behind one office address stay in; a
# password sprayer, one or two tries at each of many names, is stopped. Not
# applied to loopback and private addresses (a proxy's, see
# TRUST_PROXY_HEADERS); `manage.py signin_unblock ADDRESS` lifts it.
SIGNIN_FAILURES_PER_ADDRESS = 5 * AXES_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "config.signin.throttled_address"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "config.signin.locked_out"
# No row per successful sign-in: nothing would ever purge them.
AXES_DISABLE_ACCESS_LOG = True
# Failures and lockouts are still logged; not a banner in every process's log.
AXES_VERBOSE = False
# Messages can carry a freshly issued key once; keep them server-side, not in a cookie.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "monitor-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Whole, not relative: Django would prefix "static/" with the sub-path of
# whichever request read it first, and a server reads it before any request.
STATIC_URL = f"{_public.path}/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns on every request without it
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True

# Request bodies: monitors are small; anything bigger is a mistake or an attack.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", 1_048_576, minimum=1024)

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
SECURE_CONTENT_TYPE_NOSNIFF = True
# HSTS, off unless asked for: browsers remember it for this long and refuse
# plain http to this host meanwhile, which cannot be taken back. Sent only on
# https requests (behind the proxy: with TRUST_PROXY_HEADERS). The redirect
# from http to https is the proxy's (check --deploy's W008).
SECURE_HSTS_SECONDS = env_int("HSTS_SECONDS", 0, minimum=0)
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
# A dashboard sign-in ends after this long without a request, and in any case
# this long after it began (config.middleware.SessionLimitsMiddleware). The
# cookie's own age is the idle limit, renewed as the person works.
SESSION_IDLE_SECONDS = env_int("SESSION_MAX_AGE_HOURS", 12, minimum=1) * 3600
SESSION_ABSOLUTE_SECONDS = env_int("SESSION_ABSOLUTE_DAYS", 7, minimum=1) * 86400
SESSION_COOKIE_AGE = SESSION_IDLE_SECONDS
# Password-reset e-mails per account (per e-mail address) and hour, whatever
# the number of requests; requests per client address follow the sign-in
# throttle (AXES_FAILURE_LIMIT within AXES_COOLOFF_TIME).
PASSWORD_RESET_EMAILS_PER_HOUR = 3
# A reset link works for an hour (Django's default is three days), and once:
# a link lying in a mailbox, a forwarded mail or a shared inbox for days is a
# way into the account. The e-mail says so.
PASSWORD_RESET_TIMEOUT = 3600
# Secure cookies by default once the public address is https: the session
# cookie must never ride a plain-http request to this host (a link, an image,
# a captive portal) where anyone listening could read it.
SESSION_COOKIE_SECURE = env_bool(
    "SECURE_COOKIES", PUBLIC_BASE_URL.startswith("https://")
)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# DRF's throttle reads "N/period" by the period's first letter; anything else
# would fail every API request, so it is refused at start.
API_RATE_LIMIT = env_str("API_RATE_LIMIT", "600/min").strip()
if not re.fullmatch(r"[0-9]+/(s|sec|second|m|min|minute|h|hour|d|day)", API_RATE_LIMIT):
    raise ConfigError(
        "API_RATE_LIMIT must be requests per second, minute, hour or day,"
        f" like 600/min, got {API_RATE_LIMIT!r}"
    )
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["monitors.api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "monitors.api.auth.KeyScopeAllows",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["monitors.api.parsers.JsonParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "monitors.api.negotiation.ContentNegotiation",
    "EXCEPTION_HANDLER": "monitors.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": ["monitors.api.auth.ApiKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"api_key": API_RATE_LIMIT},
    "UNAUTHENTICATED_USER": None,
    # OPTIONS answers 405 in the error envelope, like any method a path lacks,
    # not DRF's self-description (the OpenAPI document describes the API);
    # monitors.api.urls leaves it out of the views' methods, so Allow too.
    "DEFAULT_METADATA_CLASS": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Pagewatch monitor API",
    "DESCRIPTION": (
        "Firecrawl-compatible `/v2/monitor` API. Authenticate with "
        "`Authorization: Bearer <API key>`."
    ),
    "VERSION": "2",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Under a sub-path the paths (/v2/monitor) start there, for Swagger UI,
    # generated clients and schemathesis alike; relative to the document.
    "SERVERS": [{"url": FORCE_SCRIPT_NAME}] if FORCE_SCRIPT_NAME else [],
    # /v2/docs loads Swagger UI from drf-spectacular-sidecar's static files.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Several objects have a `status`; name each enum instead of a hash suffix.
    "ENUM_NAME_OVERRIDES": {
        "MonitorStatusEnum": "monitors.models.Monitor.Status",
        "EmailRecipientStatusEnum": "monitors.models.EmailRecipient.Status",
        "EmailRecipientSourceEnum": "monitors.models.EmailRecipient.Source",
        "ImportSourceEnum": "monitors.moving.sources",
        "CheckStatusEnum": "checks.models.Check.Status",
        "PageStatusEnum": "checks.models.PageResult.Status",
        "BulkActionEnum": "monitors.api.bulk.WIRE_ACTIONS",
        "ChangeRulesLinesEnum": "monitors.rules_changes.LINES",
    },
}

# Redis, or the embedded Valkey that `make run` starts without one
# (config/valkey.py: a unix socket under var/). Either way the broker, the
# cache (the API's rate limit, one count per key for every web process) and
# the locks take the same code path; only the address differs. Nothing calls
# cache.clear() outside tests: it empties the whole database, broker queues
# included.
REDIS_URL = env_redis_url("REDIS_URL")
EMBEDDED_VALKEY = not REDIS_URL
REDIS_LOCATION = REDIS_URL or valkey.url(VAR_DIR)
# A Redis that stops answering without closing its connections (stopped,
# failed over, a firewall dropping packets) must cost a request seconds, not
# hang it: kombu waits forever by default, and gunicorn then kills the web
# worker mid-request after 30 s. A healthy Redis answers in milliseconds.
REDIS_SOCKET_TIMEOUTS = {"socket_connect_timeout": 3, "socket_timeout": 3}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_LOCATION,
        "KEY_PREFIX": "pagewatch",
        "OPTIONS": REDIS_SOCKET_TIMEOUTS,
    }
}

# --- Monitoring rules -------------------------------------------------------
MIN_SCHEDULE_INTERVAL_MINUTES = env_int("MIN_SCHEDULE_INTERVAL_MINUTES", 5, minimum=1)
# The largest file an import reads (a changedetection.io backup with its
# snapshots is the big one); larger uploads are refused before being read.
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
UNCHANGED_PAGES_FREE_MIN_INTERVAL = env_int(
    "UNCHANGED_PAGES_FREE_MIN_INTERVAL", 60, minimum=1
)
ALLOW_PRIVATE_NETWORK_TARGETS = env_bool("ALLOW_PRIVATE_NETWORK_TARGETS", False)
OUTBOUND_USER_AGENT = env_str(
    "OUTBOUND_USER_AGENT", "Pagewatch/0.1 (+https://github.com/pagewatch)"
)
FETCH_TIMEOUT_SECONDS = env_int("FETCH_TIMEOUT_SECONDS", 30, minimum=1)
FETCH_MAX_BYTES = env_int("FETCH_MAX_BYTES", 10 * 1024 * 1024, minimum=1024)
FETCH_CONCURRENCY = env_int("FETCH_CONCURRENCY", 16, minimum=1)
FETCH_PER_HOST_CONCURRENCY = env_int("FETCH_PER_HOST_CONCURRENCY", 4, minimum=1)
# Pages per Celery task: a check with more fans out into batches of this many,
# which every worker on every machine can take (checks.runner).
CHECK_BATCH_SIZE = env_int("CHECK_BATCH_SIZE", 100, minimum=1)
# A running check or batch silent this long lost its worker: its batch is sent
# again (or the check ended with a reason). Running batches write a heartbeat
# every 10 s.
CHECK_STALE_AFTER_SECONDS = env_int("CHECK_STALE_AFTER_SECONDS", 120, minimum=15)
# Crawl targets (checks.crawl): the most pages one crawl visits (crawlOptions.limit
# is bounded by it), how long a crawl keeps admitting new pages before it stops
# as truncated, and whether monitors may set ignoreRobotsTxt / robotsUserAgent.
CRAWL_MAX_PAGES = env_int("CRAWL_MAX_PAGES", 10_000, minimum=1)
CRAWL_DEADLINE_SECONDS = env_int("CRAWL_DEADLINE_SECONDS", 3600, minimum=60)
CRAWL_ALLOW_IGNORE_ROBOTS = env_bool("CRAWL_ALLOW_IGNORE_ROBOTS", False)
# The browser (checks.browser): Chromium driven by Playwright for pages whose
# options need one, or whose plain fetch looked built by scripts. Empty
# BROWSER_EXECUTABLE: Debian's /usr/bin/chromium, else `chromium` on PATH.
BROWSER_EXECUTABLE = env_str("BROWSER_EXECUTABLE", "")
# Pages one worker process has open in its browser at once.
BROWSER_CONCURRENCY = env_int("BROWSER_CONCURRENCY", 2, minimum=1)
# A long-lived Chromium grows: a new one after this many pages.
BROWSER_RESTART_AFTER_PAGES = env_int("BROWSER_RESTART_AFTER_PAGES", 100, minimum=1)
# An idle browser is closed after this long (started again when needed).
BROWSER_IDLE_SECONDS = env_int("BROWSER_IDLE_SECONDS", 300, minimum=1)
# Bytes one page may receive, everything it loads included.
BROWSER_MAX_BYTES = env_int("BROWSER_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
# JavaScript heap of one page, in MB.
BROWSER_MEMORY_MB = env_int("BROWSER_MEMORY_MB", 512, minimum=16)
# The Celery queue of browser pages ("" = the default queue: every worker
# takes them); `make run` starts a worker for it when Chromium is installed.
BROWSER_QUEUE = env_str("BROWSER_QUEUE", "browser")
# Browser pages per batch (a browser page costs seconds, not milliseconds).
BROWSER_BATCH_SIZE = env_int("BROWSER_BATCH_SIZE", 10, minimum=1)
# Hand pages whose plain fetch looks built by scripts to the browser.
BROWSER_AUTO_DETECT = env_bool("BROWSER_AUTO_DETECT", True)
# OCR of scanned PDF pages (checks.content.ocr): Debian's tesseract driven as
# a subprocess. Empty OCR_EXECUTABLE: `tesseract` on PATH; none found: PDFs
# are read from their text layer only, as the pdf parser's "fast" mode does.
OCR_EXECUTABLE = env_str("OCR_EXECUTABLE", "")
# Tesseract's languages, joined with "+" (each needs its tesseract-ocr-<lang>
# package): the words it can recognise.
OCR_LANGUAGES = env_str("OCR_LANGUAGES", "eng").strip() or "eng"
if not re.fullmatch(r"[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*", OCR_LANGUAGES):
    raise ConfigError(
        f"OCR_LANGUAGES must be tesseract language names joined with +, "
        f"such as eng or eng+deu; got {OCR_LANGUAGES!r}"
    )
# Pages of one PDF read with OCR at most; later pages keep their text layer.
OCR_MAX_PAGES = env_int("OCR_MAX_PAGES", 20, minimum=1)
# Pixels of one page's image at most: a bigger page is rendered smaller.
OCR_MAX_PIXELS = env_int("OCR_MAX_PIXELS", 12_000_000, minimum=10_000)
# Seconds the engine may spend on one page before it is killed.
OCR_PAGE_SECONDS = env_int("OCR_PAGE_SECONDS", 60, minimum=1)
# Seconds the OCR of one whole PDF may take (rendering and engine, in a child
# process killed at the deadline); never beyond CHECK_TIME_LIMIT_SECONDS less
# a minute (below, where that limit is read).
OCR_PDF_SECONDS = env_int("OCR_PDF_SECONDS", 300, minimum=1)
# Memory (address space) the OCR child process may use, in MB: a PDF that
# needs more is a page error instead of the worker's memory.
OCR_MEMORY_MB = env_int("OCR_MEMORY_MB", 1024, minimum=256)
# How long the signed screenshot and PDF links in results stay valid.
CAPTURE_URL_TTL_SECONDS = env_int("CAPTURE_URL_TTL_SECONDS", 86_400, minimum=60)
# --- The AI model (checks.ai): any OpenAI-compatible endpoint ---------------
# Empty LLM_BASE_URL: no model; judging reports "not judged" and JSON
# extraction is a page error that says so. The endpoint's host is the only
# private address the model's requests may reach.
LLM_BASE_URL = env_str("LLM_BASE_URL", "").strip().rstrip("/")
LLM_API_KEY = env_secret("LLM_API_KEY", "")
LLM_MODEL = env_str("LLM_MODEL", "").strip()
LLM_TIMEOUT_SECONDS = env_int("LLM_TIMEOUT_SECONDS", 30, minimum=1)
LLM_MAX_INPUT_TOKENS = env_int("LLM_MAX_INPUT_TOKENS", 6000, minimum=500)
# The most tokens one answer may use (JSON extraction's; the judges and
# summaries take a share): a page cannot talk the model into writing more.
LLM_MAX_OUTPUT_TOKENS = env_int("LLM_MAX_OUTPUT_TOKENS", 4000, minimum=1000)
# Tokens (prompt and answer) each team's calls may use per UTC calendar month
# (checks.ai.allowance); empty: no limit.
LLM_MONTHLY_TOKENS_PER_TEAM = env_optional_int("LLM_MONTHLY_TOKENS_PER_TEAM", minimum=1)
if LLM_BASE_URL and not LLM_BASE_URL.startswith(("http://", "https://")):
    raise ConfigError(
        f"LLM_BASE_URL must start with http:// or https://, got {LLM_BASE_URL!r}"
    )
if LLM_BASE_URL and not LLM_MODEL:
    raise ConfigError("LLM_MODEL must name the model when LLM_BASE_URL is set")
# --- Web search (checks.search): search targets' provider -------------------
# SEARCH_PROVIDER picks one of searxng, brave, tavily, firecrawl; empty picks
# the first configured in that order (SearXNG whenever SEARXNG_URL is set).
# None configured: search targets are saved, and checks report them as not
# run. The provider's host is the only private address its requests may reach.
SEARCH_PROVIDER = env_str("SEARCH_PROVIDER", "").strip().lower()
SEARXNG_URL = env_str("SEARXNG_URL", "").strip().rstrip("/")
BRAVE_API_KEY = env_secret("BRAVE_API_KEY", "")
TAVILY_API_KEY = env_secret("TAVILY_API_KEY", "")
FIRECRAWL_API_KEY = env_secret("FIRECRAWL_API_KEY", "")
FIRECRAWL_API_URL = env_str("FIRECRAWL_API_URL", "https://api.firecrawl.dev")
FIRECRAWL_API_URL = FIRECRAWL_API_URL.strip().rstrip("/")

# --- Channels -----------------------------------------------------------------
# A Slack app's bot token (xoxb-…, scopes chat:write and channels:read) turns on
# the `slack` channel kind and Firecrawl's `notification.slack`. SLACK_API_URL
# is Slack's Web API; tests stand a fake in.
SLACK_BOT_TOKEN = env_secret("SLACK_BOT_TOKEN", "")
SLACK_API_URL = env_url("SLACK_API_URL", "https://slack.com/api/")
SEARCH_TIMEOUT_SECONDS = env_int("SEARCH_TIMEOUT_SECONDS", 20, minimum=1)
for _name, _url in (
    ("SEARXNG_URL", SEARXNG_URL),
    ("FIRECRAWL_API_URL", FIRECRAWL_API_URL),
):
    if _url and not _url.startswith(("http://", "https://")):
        raise ConfigError(f"{_name} must start with http:// or https://, got {_url!r}")
_SEARCH_NEEDS = {
    "searxng": ("SEARXNG_URL", SEARXNG_URL),
    "brave": ("BRAVE_API_KEY", BRAVE_API_KEY),
    "tavily": ("TAVILY_API_KEY", TAVILY_API_KEY),
    "firecrawl": ("FIRECRAWL_API_KEY", FIRECRAWL_API_KEY),
}
if SEARCH_PROVIDER and SEARCH_PROVIDER not in _SEARCH_NEEDS:
    raise ConfigError(
        "SEARCH_PROVIDER must be one of searxng, brave, tavily, firecrawl, "
        f"got {SEARCH_PROVIDER!r}"
    )
if SEARCH_PROVIDER and not _SEARCH_NEEDS[SEARCH_PROVIDER][1]:
    raise ConfigError(
        f"SEARCH_PROVIDER={SEARCH_PROVIDER} needs {_SEARCH_NEEDS[SEARCH_PROVIDER][0]}"
    )
# How often beat asks for due monitors (checks.dispatch sizes its ticks by it).
DISPATCH_EVERY_SECONDS = 10.0
# How often the sweeper looks for lost batches and stale checks: a small part
# of CHECK_STALE_AFTER_SECONDS, so a check whose worker died is taken up again
# (or ended) within that time and one sweep (120 + 15 s by default).
STALE_SWEEP_EVERY_SECONDS = max(5.0, CHECK_STALE_AFTER_SECONDS / 8)
# GET /metrics answers only `Authorization: Bearer METRICS_TOKEN`; unset, the
# page does not exist (404).
METRICS_TOKEN = env_secret("METRICS_TOKEN", "")
# How often a worker serving the check queue is asked to show it is alive;
# /healthz calls it gone after HEALTH_STALE_AFTER_SECONDS without a sign.
WORKER_HEARTBEAT_EVERY_SECONDS = 15.0
HEALTH_STALE_AFTER_SECONDS = 60
# Beat is the only scheduler and only enqueues these small periodic tasks; which
# monitors are due lives in the database. Every entry expires after one period:
# if workers were down, a backlog of identical ticks must not run back to back.
CELERY_BEAT_SCHEDULE = {
    name: {"task": task, "schedule": every, "options": {"expires": every}}
    for name, task, every in (
        ("dispatch-due-monitors", "checks.tasks.dispatch_due_monitors_task",
         DISPATCH_EVERY_SECONDS),
        # Lost batches sent again, stale checks ended (checks.runner).
        ("fail-stale-checks", "checks.tasks.fail_stale_checks_task",
         STALE_SWEEP_EVERY_SECONDS),
        ("purge-expired", "checks.tasks.purge_expired_task", 3600.0),
        # Teams' history sizes for /metrics, the stalest few each run
        # (checks.storage.measure_stale_teams).
        ("measure-team-storage", "checks.tasks.measure_team_storage_task", 60.0),
        # Due webhook/e-mail deliveries: retries, and rows whose broker message
        # was lost (checks.notify.sweep).
        ("sweep-deliveries", "checks.notify.tasks.sweep_deliveries_task", 60.0),
        # On the check queue: /healthz sees a worker serving it (checks.health).
        ("worker-heartbeat", "checks.tasks.worker_heartbeat_task",
         WORKER_HEARTBEAT_EVERY_SECONDS),
        # Channels' daily and weekly digests (checks.notify.digests).
        ("queue-digests", "checks.notify.tasks.queue_digests_task", 60.0),
    )
}  # fmt: skip
# Beat's own state (when each entry last ran) lives with the rest of var/, not
# in whatever directory `celery -A config beat` happens to start in.
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# One line when the broker goes away and one when it is back, not a traceback
# per tick (config.beat).
CELERY_BEAT_SCHEDULER = "config.beat.Scheduler"

# --- Celery -------------------------------------------------------------------
# A message unacknowledged this long is handed to another worker: a check
# that may run longer (CHECK_TIME_LIMIT_SECONDS) would run twice at once.
BROKER_VISIBILITY_TIMEOUT_SECONDS = 3600
CELERY_BROKER_URL = valkey.broker_url(REDIS_LOCATION)
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
    "visibility_timeout": BROKER_VISIBILITY_TIMEOUT_SECONDS,
    **REDIS_SOCKET_TIMEOUTS,
}
# Upkeep (the periodic dispatch and sweeps) has a queue of its own, which the
# Procfile's `upkeep` worker consumes alone: a worker that is stuck, dead or
# busy with long checks cannot hold it up. Browser pages have one too
# (BROWSER_QUEUE), for the Procfile's `browser` worker. A worker started
# without -Q takes every queue, so one plain worker still does everything.
UPKEEP_QUEUE = "upkeep"
# Deliveries (webhooks, e-mails, channels) have theirs, served by the
# Procfile's `notify` worker, so they never wait behind checks.
NOTIFICATIONS_QUEUE = "notifications"
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = tuple(
    Queue(name, routing_key=name)
    for name in dict.fromkeys(
        [
            CELERY_TASK_DEFAULT_QUEUE,
            UPKEEP_QUEUE,
            NOTIFICATIONS_QUEUE,
            BROWSER_QUEUE or UPKEEP_QUEUE,
        ]
    )
)
CELERY_TASK_ROUTES = {
    task: {"queue": UPKEEP_QUEUE}
    for task in (
        "checks.tasks.dispatch_due_monitors_task",
        "checks.tasks.fail_stale_checks_task",
        "checks.notify.tasks.sweep_deliveries_task",
        "checks.notify.tasks.queue_digests_task",
    )
} | {
    task: {"queue": NOTIFICATIONS_QUEUE}
    for task in (
        "checks.notify.tasks.deliver_task",
        "checks.notify.tasks.drain_task",
        "teams.tasks.send_password_reset_task",
    )
}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fix-up closes the database connection before and after
# every task unless told to reuse it this many times (it counts the two
# calls of each task, across a threads pool's threads). Tasks keep theirs
# instead, as requests do: config.celery closes one that is older than
# DATABASE_CONN_MAX_AGE or broken. A connection opened for every task cost
# about a fifth of a delivery's time in the notifications worker's drains.
CELERY_DB_REUSE_MAX = 1_000_000
# Pool processes of a worker started without --concurrency: Procfile.large's
# check worker and a plain `celery -A config worker` (Celery's own default:
# one per CPU). The default Procfile's worker runs threads (WORKER_THREADS).
CELERY_WORKER_CONCURRENCY = env_int("WORKER_PROCESSES", os.cpu_count() or 1, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CHECK_TIME_LIMIT_SECONDS", 900, minimum=30)
if CELERY_TASK_TIME_LIMIT >= BROKER_VISIBILITY_TIMEOUT_SECONDS:
    raise ConfigError(
        f"CHECK_TIME_LIMIT_SECONDS must be below {BROKER_VISIBILITY_TIMEOUT_SECONDS} "
        "(the broker's visibility timeout, after which a running check would "
        f"be handed to a second worker), got {CELERY_TASK_TIME_LIMIT}"
    )
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 15
# All the OCR of one check task (every PDF of its pages, one after another)
# ends this long after the task started, well before its time limit, so the
# check still records its pages: a PDF not read by then is a page error that
# says so (checks.content.ocr.within). One PDF's deadline is never beyond it.
OCR_CHECK_SECONDS = max(10, CELERY_TASK_TIME_LIMIT - 60)
OCR_PDF_SECONDS = min(OCR_PDF_SECONDS, OCR_CHECK_SECONDS)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Workers wait out a broker outage of any length instead of exiting after
# 100 tries (about 50 minutes), which only a supervisor would undo.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A check running when the broker drops keeps running: its pages and batches
# are claimed in the database, so the copy of its message that the broker
# hands out again afterwards finds the work taken and ends at once, while
# cancelling would throw the pages in flight away. Said explicitly, since
# Celery 6 is to change the default.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# What a task prints is logged at INFO, not Celery's WARNING: make run's
# console e-mail backend prints every e-mail from the worker, and each one was
# two WARNING lines among the real warnings (and kept LOG_LEVEL=WARNING from
# quieting them).
CELERY_WORKER_REDIRECT_STDOUTS_LEVEL = "INFO"

# --- E-mail -------------------------------------------------------------------
# Until SMTP is set up, e-mails are written to the log as readable text
# (config.mail), links whole, for whoever is trying Pagewatch out.
_EMAIL_BACKEND = env_str("EMAIL_BACKEND", "config.mail.EmailBackend")
_SMTP_OPTIONS = {
    "host": env_str("EMAIL_HOST", "localhost"),
    "port": env_int("EMAIL_PORT", 25, minimum=1),
    "username": env_str("EMAIL_HOST_USER", ""),
    "password": env_secret("EMAIL_HOST_PASSWORD", ""),
    "use_tls": env_bool("EMAIL_USE_TLS", False),
    "timeout": 30,
}
MAILERS = {
    "default": {
        "BACKEND": _EMAIL_BACKEND,
        # Only the SMTP backend takes connection options; others reject them.
        "OPTIONS": _SMTP_OPTIONS
        if _EMAIL_BACKEND.endswith("smtp.EmailBackend")
        else {},
    }
}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Pagewatch <pagewatch@localhost>")

_TASK_LOG_LEVEL = env_log_level("CELERY_TASK_LOG_LEVEL", "WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    },
    "filters": {
        "without_cancel_notice": {"()": "config.celery.WithoutCancelNotice"},
        "without_credentials": {"()": "config.logs.WithoutCredentials"},
        "outage_in_one_line": {"()": "config.logs.OutageInOneLine"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["without_credentials"],
        }
    },
    "root": {"handlers": ["console"], "level": env_log_level("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # A 503 for the database away: one line, not a traceback per request.
        "django.request": {"filters": ["outage_in_one_line"]},
        # The dispatcher ticks every 10 s; a line per tick would bury the log.
        # Check runs, failures and deliveries still log at INFO and above.
        "celery.app.trace": {"level": _TASK_LOG_LEVEL},
        "celery.worker.strategy": {"level": _TASK_LOG_LEVEL},
        "celery.beat": {"level": _TASK_LOG_LEVEL},
        # Python warnings as Celery logs them (config.celery.WithoutCancelNotice).
        "py.warnings": {"filters": ["without_cancel_notice"]},
    },
}
