"""A worker's plugin (celery worker --include tests.kinds_plugin): the
throwaway kind of tests/test_target_kinds, registered as a plugin registers
its kinds, so a real worker runs its targets."""

from __future__ import annotations

from monitors.target_kinds import register
from tests.test_target_kinds import OnePageKind

register(OnePageKind)
