"""The studio over the memory service says why a forget matched nothing as it does over a file: the service's
``hint`` (why, what was searched, then the HTTP routes that list memories) reaches the studio without the routes,
which the studio names as its own pages (:func:`timem.ui.chat_forget.nothing_matched`)."""

from __future__ import annotations

from timem.memory.forget import ForgetPreview
from timem.service.client import _without_routes
from timem.service.models import ForgetOut
from timem.ui.chat_forget import nothing_matched


def test_the_hint_read_back_from_the_service_drops_the_routes_and_keeps_the_why():
    plan = ForgetPreview(user_id="acme/mia", text="my iguana", hint="no memory holds 'iguana'. Check the spelling.",
                         searched_items=3, searched_segments=12)
    sent = ForgetOut.of(plan, "mia", "my iguana", forgotten=False).hint or ""
    assert "GET /v1/users/mia/items" in sent  # an HTTP client is told the routes
    read = ForgetPreview(user_id="mia", text="my iguana", hint=_without_routes(sent))
    assert read.why() == plan.why() and "GET" not in read.why()
    said = nothing_matched("my iguana", read)
    assert "no memory holds 'iguana'" in said and "Searched 3 fact(s) and 12 conversation segment(s)" in said
    assert "Memories page" in said and "GET" not in said
