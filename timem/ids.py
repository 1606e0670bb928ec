"""The rule for the user and session ids a person types: one rule for every way in.

The memory service refuses any other id (HTTP 422, :mod:`timem.service.models` builds its patterns from
:data:`ID_PATTERN`); the studio checks a new user id with :func:`check_service_id` before it switches to it, so a
user made in the studio can be sent to a service too. The command line checks the user ids it creates with it too
(``timem ingest`` every user of the file, ``timem mcp --user``), before anything is opened.

The Python library (``timem.open(path).remember(...)`` and every other write of :class:`timem.engine.MemoryEngine`)
applies the same rule to a user that a write *creates* (:func:`check_new_user_id`): a new-user trial wrote
``"a b"`` and ``"a/b"`` through the library, and ``timem export`` then wrote a file that ``timem ingest`` refused,
so the export did not round-trip. Decided:

* one rule per concept: a **new** user's id follows :data:`ID_PATTERN`, whichever way it comes in (library, command
  line, studio, memory service, MCP); the memory service's engine stores its users as ``tenant/user``
  (:attr:`timem.engine_reads.EngineCore.tenant_ids`), and there the user part follows it;
* a user **already stored** keeps its id: files written before this rule (by the library, or from a dataset's
  file through ``MemoryEngine.ingest``) may hold looser ids, which the library still reads and writes to, checked
  only with the rules every id meets (:func:`timem.datasets.base.check_id`: one line, no ``:``; and in
  ``MemoryEngine.ingest``, :func:`timem.datasets.base.check_user_id`: no ``/`` either). Such a user's export may
  still be refused by ``timem ingest``: rename it there;
* session ids are not checked here: ``timem ingest`` takes the looser ones (:func:`timem.datasets.base.check_id`),
  so they round-trip; only the memory service and MCP, which name sessions in URLs and tool calls, refuse them.
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


def check_new_user_id(value: str, *, tenant_ids: bool = False) -> str:
    """``value`` unchanged if a write may create a user with it: :data:`ID_PATTERN` (:func:`check_service_id`), so
    that what is written can be exported and read back with ``timem ingest``, the memory service and MCP.
    ``tenant_ids``: ``value`` is the memory service's stored id ``tenant/user``, and its user part follows the rule.
    A user already stored is not checked with it (see the module's docstring).

    Raises:
        InputError: it breaks the rule; the message says what the id may hold and what to do.
    """
    tenant, sep, user = value.partition("/") if tenant_ids else ("", "", value)
    if tenant_ids and not (sep and tenant):
        raise InputError(f"user id {value!r} is not a tenant's user id (tenant/user); the memory service writes those",
                         field="user_id")
    if not _ID_RE.fullmatch(user):
        raise InputError(f"{id_error('user id', user)}; choose another id for the new user (the command line, the "
                         "studio and the memory service take no other, so its export could not be read back)",
                         field="user_id")
    return value
