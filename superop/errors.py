"""Errors a user can act on. The CLI prints them as one line and exits non-zero."""


class SuperopError(Exception):
    """Base of user-facing errors (bad input, unusable files)."""


class SqlError(SuperopError):
    """SQL that cannot be parsed or refers to unknown tables/columns."""


class SchemaError(SuperopError):
    """A schema file that is missing or malformed."""


class CatalogError(SuperopError):
    """A rule catalog that cannot be used (missing, malformed, tampered, unsigned, unverified)."""
