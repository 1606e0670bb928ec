"""A fake OpenAI-compatible endpoint on 127.0.0.1 for the quickstart and the core-install tests (stdlib only, so a
fresh venv can run it too: ``python tests/openai_fake.py 'question=answer' ...`` prints its base URL, then serves).

It answers the two calls a recall and an answer make with an endpoint (``gate = "llm"``, the endpoint's default):

* the recall gate (``{"keep": [numbers]}``): keeps every numbered memory it is shown;
* the answer (``Question: ...`` without a JSON schema): the scripted answer for that question.

Any other request (a consolidation, an extraction, an unscripted question) gets HTTP 400 with a message naming it,
so a quickstart that starts to call the LLM for something else fails instead of passing on a made-up reply.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def reply(body: dict[str, Any], answers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, JSON body)`` for one ``/chat/completions`` request ``body``."""
    messages = body.get("messages") or []
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = messages[-1]["content"] if messages else ""
    if '{"keep": [numbers]}' in system:
        content = json.dumps({"keep": [int(n) for n in re.findall(r"^\[(\d+)\]", user, re.MULTILINE)]})
    elif body.get("response_format") is None and (m := re.search(r"^(?:Question|Message): (.*)$", user, re.MULTILINE)):
        if m.group(1) not in answers:
            return 400, {"error": {"message": f"fake endpoint: no answer scripted for {m.group(1)!r}"}}
        content = answers[m.group(1)]
    else:
        return 400, {"error": {"message": f"fake endpoint: unexpected request: {system[:80]!r}"}}
    return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000,
                 "model": body.get("model", "fake"),
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": content}}],
                 "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class FakeEndpoint:
    """The fake served in a thread: ``with FakeEndpoint({"What is my cat called?": "Pixel."}) as url: ...``
    (``url`` ends in ``/v1``); :attr:`requests` holds every request body, :attr:`statuses` the HTTP status of
    each reply."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                status, payload = reply(body, outer.answers)
                outer.statuses.append(status)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    endpoint = FakeEndpoint(dict(a.split("=", 1) for a in sys.argv[1:]))
    with endpoint as base_url:
        print(base_url, flush=True)
        threading.Event().wait()
