"""The rule for the user and session ids a person types: one rule for the memory service and the studio.

The memory service refuses any other id (HTTP 422, :mod:`timem.service.models` builds its patterns from
:data:`ID_PATTERN`); the studio checks a new user id with :func:`check_service_id` before it switches to it, so a
user made in the studio can be sent to a service too. The command line checks the user ids it creates with it too
(``timem ingest`` every user of the file, ``timem mcp --user``), before anything is opened. Local files read through
the Python API may hold looser ids (:meth:`timem.engine.MemoryEngine.ingest` checks them with
:func:`timem.datasets.base.check_user_id`).
"""

from __future__ import annotations

import re

from timem.errors import InputError

#: user and session ids a tenant may use: letters, digits, ``.``, ``_``, ``-`` (no ``/`` or ``:``, which
#: the store uses in namespaced user ids and turn ids)
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
#: what :data:`ID_PATTERN` allows, in words: an id that breaks it is told this, never the regex
ID_RULE = ("use 1-128 ASCII letters (a-z, A-Z; no accents, no Chinese), digits, '.', '_' or '-', starting with a "
           "letter or digit")
#: why a separator of the store's ids is refused in a user or session id
SEPARATORS = {":": "':' is refused: it separates the parts of a turn id (user:session:seq), so two turns could get "
                   "the same id",
              "/": "'/' is refused: it separates the tenant from the user in stored user ids (tenant/user)"}

_ID_RE = re.compile(ID_PATTERN)


def id_error(what: str, value: object) -> str:
    """The one-line message for ``value`` that breaks :data:`ID_PATTERN`, named ``what`` (e.g. ``"user id"``,
    ``"session_id"``): what the id may hold and why a ``:`` or ``/`` in it is refused."""
    shown = repr(value) if len(str(value)) <= 80 else f"{str(value)[:77]!r}..."
    why = [SEPARATORS[c] for c in SEPARATORS if c in str(value)]
    return f"{what} {shown} is not valid: {ID_RULE}" + "".join(f"; {w}" for w in why)


def check_service_id(value: str, what: str = "user id", field: str = "user_id") -> str:
    """``value`` unchanged if the memory service takes it as a user or session id (:data:`ID_PATTERN`).

    Raises:
        InputError: it breaks the rule (a space, a character outside ASCII letters, digits, ``.``, ``_``, ``-``, or
            more than 128 characters); the message says what the id may hold (:func:`id_error`).
    """
    if not _ID_RE.fullmatch(value):
        raise InputError(id_error(what, value), field=field)
    return value
