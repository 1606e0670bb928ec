"""The README's Python quickstart runs as written and prints what the README shows: its ```python block runs in a
fresh interpreter with only the core install's packages importable (:mod:`core_only`), against a fake
OpenAI-compatible endpoint on 127.0.0.1 (:mod:`openai_fake`) given in ``TIMEM_OPENAI_BASE_URL``, as the README
says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from openai_fake import FakeEndpoint

REPO = Path(__file__).resolve().parents[1]
#: what the fake endpoint answers; the README says the answer's wording is the model's
ANSWERS = {"What is my cat called?": "Your cat is called Pixel."}


def quickstart(readme: str) -> tuple[str, str]:
    """``(code, printed output)``: the first ```python block of the README's "Python quickstart" section and the
    first ```text block after it."""
    section = readme.split("\n## Python quickstart\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None, "no ```python block in the README's Python quickstart"
    shown = re.search(r"```text\n(.*?)```", section[code.end():], re.DOTALL)
    assert shown is not None, "no ```text block with the output after the quickstart's code"
    return code.group(1), shown.group(1)


def test_the_readme_quickstart_prints_what_the_readme_shows(tmp_path):
    code, shown = quickstart((REPO / "README.md").read_text(encoding="utf-8"))
    (tmp_path / "quickstart.py").write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIMEM_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "tests")])
    endpoint = FakeEndpoint(ANSWERS)
    with endpoint as url:
        env.update(TIMEM_OPENAI_BASE_URL=url, TIMEM_OPENAI_API_KEY="sk-fake")
        run = subprocess.run([sys.executable, "-c", "import core_only, runpy; runpy.run_path('quickstart.py')"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == shown
    # the endpoint answered every call (a refused gate would fall back to the score gate, noted in the trace)
    assert endpoint.statuses and set(endpoint.statuses) == {200}, endpoint.statuses


def test_the_extraction_finds_the_block_and_its_output():
    readme = ("# x\n\n## Python quickstart\n\ntext\n\n```python\nprint(1)\n```\n\nIt prints:\n\n```text\n1\n```\n\n"
              "## Next\n")
    assert quickstart(readme) == ("print(1)\n", "1\n")
