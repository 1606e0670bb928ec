"""Every error TiMem raises derives from :class:`TimemError`.

Messages say what happened *and what to do about it*; the CLI and the studio show them
verbatim to the user.
"""

from __future__ import annotations

from typing import Any


class TimemError(Exception):
    """Base class of every error raised by TiMem."""


class ConfigError(TimemError):
    """A setting is missing or invalid (e.g. an unknown LLM backend or a bad time zone)."""


class MissingExtraError(ConfigError):
    """An optional feature was used without the install extra that brings its packages (``[local]``,
    ``[studio]``, ``[service]``, ``[bench]``, ``[cluster]``; see pyproject.toml). The message names the
    ``pip install`` that adds them; ``make install`` installs every extra.

    Attributes:
        feature: what was used (``"timem serve"``). extra: the extra's name. missing: the package not found.
    """

    def __init__(self, feature: str, extra: str, missing: str | None = None) -> None:
        what = f" ({missing} is not installed)" if missing else ""
        super().__init__(f"{feature} needs the optional '{extra}' packages{what}: pip install 'timem[{extra}]' "
                         f"(in a checkout: pip install -e '.[{extra}]', or `make install` for everything)")
        self.feature, self.extra, self.missing = feature, extra, missing

    def __reduce__(self) -> tuple[type[MissingExtraError], tuple[str, str, str | None]]:
        return type(self), (self.feature, self.extra, self.missing)


class InputError(TimemError):
    """Malformed input data. The message names the file, the record and the field.

    Importers raise it *before* anything is written, so the store is left unchanged.
    """

    def __init__(self, message: str, *, file: str | None = None, record: str | None = None,
                 field: str | None = None) -> None:
        where = ", ".join(p for p in (
            f"file {file}" if file else "",
            f"record {record}" if record else "",
            f"field {field!r}" if field else "",
        ) if p)
        super().__init__(f"{message} ({where})" if where else message)
        #: the message without where it was found: what a person who typed the input needs (the studio's chat)
        self.reason = message
        self.file, self.record, self.field = file, record, field


class BadRequestError(InputError):
    """A request that cannot be served as sent (HTTP 400 in the service): e.g. a chat completion without a
    memory user, or with fields the embedded model cannot honour (the message names them)."""


class StoreError(TimemError):
    """The DuckDB store cannot be opened, migrated or written, or it was built with another embedder."""


class InvariantError(TimemError):
    """A Temporal Memory Tree invariant (e.g. temporal containment) would be violated by a write."""


class EmbeddingError(TimemError):
    """The embedder could not be loaded or returned an unusable vector (never replaced by a fake one)."""


class LLMError(TimemError):
    """An LLM call failed: unreachable endpoint, timeout, or no valid JSON after bounded retries."""


class UpstreamError(LLMError):
    """An upstream OpenAI-compatible endpoint answered with an error status; ``http_status`` is that status,
    which the memory service answers with too (:func:`timem.service.context.status_of`)."""

    def __init__(self, message: str, http_status: int) -> None:
        super().__init__(message)
        self.http_status = http_status


class ModelFileError(LLMError):
    """The embedded GGUF model is missing or its SHA-256 does not match; it is never loaded then."""


class NotFoundError(TimemError):
    """A user, memory node, session or recall trace that was asked for does not exist."""


class UnknownUserError(NotFoundError):
    """The user asked for has no turn, memory or memory item in the store
    (:meth:`timem.engine_reads.StoreReads.require_user`). ``user_id``: that user, as stored (a service's
    ``<tenant>/<user>``), so that a caller can say it in its own words (the memory service's 404)."""

    def __init__(self, message: str, user_id: str) -> None:
        super().__init__(message)
        self.user_id = user_id

    def __reduce__(self) -> tuple[type[UnknownUserError], tuple[str, str]]:
        return type(self), (str(self), self.user_id)


class UnusableAnswerError(LLMError):
    """The model answered, but the answer cannot be used: no valid JSON for the schema after the
    bounded retries, or (consolidation) no sentence supported by the inputs. Nothing is written from
    it; a consolidation window it was for stays due."""


class ConsolidationIncomplete(LLMError):
    """Some windows could not be consolidated; every other due window was written.

    Attributes:
        failures: ``(level, window_key, message)`` per failed window, in the order met.
        written: the nodes that were written in the same run.
        report: for an ingest, its :class:`timem.engine.IngestReport` (else ``None``).
    """

    def __init__(self, failures: list[tuple[int, str, str]], written: list[Any], report: object = None) -> None:
        self.failures, self.written, self.report = failures, written, report
        keys = ", ".join(f"L{lv} {key}" for lv, key, _ in failures)
        super().__init__(
            f"{len(failures)} window(s) could not be consolidated ({keys}); {len(written)} other memories were "
            f"written. First reason: {failures[0][2]} The failed windows stay due: consolidate again with a "
            "larger model or an OpenAI-compatible endpoint (TIMEM_LLM_BACKEND=openai). Details: the audit log "
            "(action consolidation-failed).")


class ChatTurnError(TimemError):
    """A chat message was stored, but a later stage of the chat turn failed: answering it (``stage="answer"``:
    the message stays in the session; send it again for an answer), storing the reply (``stage="reply"``), or
    writing the exchange's memories (``stage="memories"``: the exchange is stored, consolidation stopped; the
    windows stay due)."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


class TextTooLongError(InputError):
    """A text (message, reply, query, memory content, a turn) is longer than the configured maximum
    (``service_max_text_chars`` for a service request, ``max_turn_chars`` for any turn); nothing was written.
    Split it or raise the limit."""


class UnknownSampleError(InputError):
    """A conversation (LoCoMo ``sample_id``) or instance (LongMemEval ``question_id``) asked for by id that the file
    does not hold (``--sample``); nothing was read into the store. ``unknown``: the ids not found; ``available``: the
    ids the file holds (of the selected instances), to choose from."""

    def __init__(self, message: str, *, unknown: list[str], available: list[str], file: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message, file=file, field=field)
        self.unknown, self.available = unknown, available


class AuthError(TimemError):
    """A request to the memory service carried no API key, or one that is unknown, malformed or revoked.
    Nothing was read or written; send ``Authorization: Bearer <key>`` with a key from `timem keys add`."""


class ConsolidationCancelled(TimemError):
    """A background consolidation was cancelled; the windows not yet written stay due (consolidate again)."""


class ServiceUnreachableError(TimemError):
    """The memory service (``timem serve``) could not be reached at its URL (refused, timed out, DNS). Nothing
    was read or written; start the service (``timem serve --db FILE --port PORT``) or fix the URL."""


def first_bad_byte(exc: UnicodeDecodeError) -> str:
    """Where ``exc``'s bytes stop being UTF-8, for a message: ``"byte 0xe9 at offset 14"`` (offset from 0 into the
    decoded bytes)."""
    return f"byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
