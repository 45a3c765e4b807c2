"""Model fields of our own."""

from __future__ import annotations

from base64 import b64decode, b64encode
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models


class PlainBinaryField(models.Field):
    """A `BinaryField` (bytea on PostgreSQL, BLOB on SQLite; bytes in,
    memoryview out) without its per-value placeholder.

    Django's `BinaryField.get_placeholder_sql` exists for MySQL, whose binary
    literals need a prefix; PostgreSQL's placeholder is a plain `%s`. But the
    mere presence of that method keeps PostgreSQL's `bulk_create` from its
    `UNNEST` form (one array a column), so a batch of rows went as one
    parameter a value, a long statement parsed and planned anew on every
    batch. Only PostgreSQL and SQLite are supported, so none is needed."""

    description = models.BinaryField.description
    empty_values = [None, b""]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if self.editable:
            kwargs["editable"] = True
        else:
            del kwargs["editable"]
        return name, path, args, kwargs

    def get_internal_type(self) -> str:
        # The column type, the database's converters and lookups of BinaryField.
        return "BinaryField"

    def get_default(self) -> Any:
        if self.has_default() and not callable(self.default):
            return self.default
        default = super().get_default()
        return b"" if default == "" else default

    def get_db_prep_value(
        self, value: Any, connection: Any, prepared: bool = False
    ) -> Any:
        value = super().get_db_prep_value(value, connection, prepared)
        return None if value is None else connection.Database.Binary(value)

    def value_to_string(self, obj: models.Model) -> str:
        return b64encode(self.value_from_object(obj)).decode("ascii")

    def to_python(self, value: Any) -> Any:
        # Serialised data (value_to_string) arrives as base64.
        if isinstance(value, str):
            try:
                return memoryview(b64decode(value.encode("ascii"), validate=True))
            except (UnicodeEncodeError, ValueError) as error:
                raise ValidationError(
                    "“%(value)s” is not a valid binary value.",
                    code="invalid",
                    params={"value": value},
                ) from error
        return value
