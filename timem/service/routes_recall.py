"""The memory service's recall routes (:func:`timem.service.app.create_app` includes :data:`router`): recall the
context for a question, and answer it with the service's LLM. The trace comes back as the tenant sees it."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import APIRouter

from timem.errors import ConfigError
from timem.prompts.injection import withhold_instructions
from timem.recall.pipeline import RecallResult
from timem.service.context import S, T, UserPath, as_tenant_sees, tenant_user
from timem.service.models import AnswerOut, RecallIn, RecallOut

router = APIRouter()

Out = TypeVar("Out", RecallOut, AnswerOut)


def recall_out(cls: type[Out], user: str, internal: str, res: RecallResult, **extra: Any) -> Out:
    """``res`` as a response body of class ``cls``: ids and trace without the tenant prefix; ``extra`` fields
    (an ``answer``) as given."""
    trace = as_tenant_sees(res.trace.model_dump(mode="json"), internal, user)
    prompt_context, withheld = withhold_instructions(res.context)
    return cls(user=user, context=res.context, prompt_context=prompt_context, withheld=withheld,
               node_ids=[n.id for n in res.nodes], mem_len=res.trace.context_tokens, trace=trace, **extra)


@router.post("/v1/users/{user}/recall")
def recall(user: UserPath, body: RecallIn, s: S, t: T) -> RecallOut:
    """Recall the user's memories for ``query`` as of ``question_time``: the context and the recall trace."""
    s.check_text("query", body.query)
    # an LLM planner / gate writes its cache; the engine checks the user (tenant_user: the tenant's 404)
    with s.read() if not s.engine.has_llm else s.use() as eng, tenant_user(t, user) as internal:
        qt = body.question_time or eng.default_question_time(internal)
        res = eng.recall(internal, body.query, qt, body.options(eng.config))
    return recall_out(RecallOut, user, internal, res)


@router.post("/v1/users/{user}/answer")
def answer(user: UserPath, body: RecallIn, s: S, t: T) -> AnswerOut:
    """Recall, then answer from the context with the service's LLM (409 if it has none)."""
    s.check_text("query", body.query)
    with s.use() as eng, tenant_user(t, user) as internal:
        if not eng.has_llm:
            s.require_user(eng, t, user)  # an unknown user is a 404 before the missing LLM's 409
            raise ConfigError("this service has no LLM to answer with; start it with `timem serve --llm local` "
                              "(or openai), or POST /v1/users/{user}/recall for the context alone")
        qt = body.question_time or eng.default_question_time(internal)
        out = eng.ask(internal, body.query, qt, body.options(eng.config))  # it checks the user
    return recall_out(AnswerOut, user, internal, out.recall, answer=out.answer)
