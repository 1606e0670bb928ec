"""`timem serve` on a port another process listens on: found by trying, uvicorn printed "[Errno 98] error while
attempting to bind on address ... address already in use" with no advice and exited with code 3, after the database
file was opened (a new --db path was created, empty). Now it is one error line naming the port and what to do, exit
code 1, before any file is touched."""

from __future__ import annotations

import socket

from test_cli import cli_env, run  # noqa: F401  (fixture)


def test_a_port_in_use_is_one_error_line_and_no_file(cli_env):  # noqa: F811
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out = run("serve", "--db", str(cli_env / "new.duckdb"), "--port", str(port), "--llm", "none")
    assert code == 1, out
    assert f"cannot listen on 127.0.0.1:{port}" in out and "pass another --port" in out, out
    assert not (cli_env / "new.duckdb").exists()


def test_a_host_that_does_not_resolve_says_what_to_give(cli_env):  # noqa: F811
    code, out = run("serve", "--db", str(cli_env / "new.duckdb"), "--host", "no-such-host.invalid", "--llm", "none")
    assert code == 1 and "--host 'no-such-host.invalid'" in out and "127.0.0.1" in out, out
    assert not (cli_env / "new.duckdb").exists()
