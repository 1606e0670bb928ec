"""The layer order of the code: imports run downhill only, and there is no import cycle.

Every module of ``timem/``, ``app.py`` and the ``bench/`` scripts is parsed with :mod:`ast` (nothing is imported),
and every import statement counts: at the top, inside functions, under ``if TYPE_CHECKING:``. An import of
``timem.a.b`` is an import of that module (of ``timem.a`` when ``b`` is a name in it, not a module).

Rules:

* a module may import from its own layer or from a layer below it (:data:`LAYERS`, top to bottom);
* no cycle between modules, and none between components (a package directly under ``timem/``, or a top-level
  module such as ``timem/editing.py``), so a stage lives in its pipeline's package and the packages of one
  layer form a DAG;
* every module belongs to a layer: a new package or top-level module is added to :data:`LAYERS` on purpose.

Dynamic imports (``importlib.import_module``, Streamlit page paths) are not seen.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: top to bottom; a prefix names a module or a package and everything in it (the longest prefix wins), except
#: ``timem`` itself, which names only ``timem/__init__.py``
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # ``timem`` is timem/__init__.py: the public Python API (``timem.open``), an entry point over the facade
    ("entry points", ("app", "bench", "timem", "timem.__main__", "timem.cli", "timem.cli_common",
                      "timem.cli_memory", "timem.cli_model", "timem.cli_recall", "timem.cli_service", "timem.cli_store",
                      "timem.service", "timem.studio")),
    ("ui", ("timem.ui",)),
    ("runs over the facade", ("timem.bench", "timem.ingest_cluster", "timem.openai_chat")),
    ("facade", ("timem.engine", "timem.engine_chat", "timem.engine_items", "timem.engine_queue",
                "timem.engine_read_methods", "timem.engine_reads", "timem.engine_recall", "timem.engine_writes",
                "timem.service.client", "timem.service.client_http", "timem.studio_backend")),
    ("pipelines", ("timem.chat_sessions", "timem.chat_turns", "timem.consolidation", "timem.datasets",
                   "timem.editing", "timem.memory", "timem.recall", "timem.viz")),
    ("prompts and llm", ("timem.llm", "timem.prompts")),
    ("embed and store", ("timem.cluster", "timem.embed", "timem.store")),
    ("base", ("timem.cli_options", "timem.config", "timem.errors", "timem.ids", "timem.item_holding",
              "timem.item_values", "timem.models", "timem.progress", "timem.reldates", "timem.settings",
              "timem.settings_defaults", "timem.settings_doc", "timem.settings_recall", "timem.time_text",
              "timem.tokens", "timem.tree", "timem.written_dates")),
]


@dataclass(frozen=True)
class Import:
    """``importer`` (a module name) imports ``target`` at ``path:line``."""

    importer: str
    target: str
    path: str
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line} ({self.importer} -> {self.target})"


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file for ``timem/**``, ``app.py`` and ``bench/*.py`` under ``root``."""
    files = sorted(root.glob("timem/**/*.py")) + sorted(root.glob("bench/*.py")) + sorted(root.glob("app.py"))
    out: dict[str, Path] = {}
    for f in files:
        parts = f.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def imports(root: Path, mods: dict[str, Path], prefix: str = "timem") -> list[Import]:
    """Every import of a ``prefix`` module by a module of ``mods`` (statements anywhere in the file)."""
    out: list[Import] = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
            for t in dict.fromkeys(targets):  # `from m import a, b`: one import of m
                if t != prefix and not t.startswith(prefix + "."):
                    continue
                while t not in mods and "." in t:  # a name that is no module: the module that holds it
                    t = t.rpartition(".")[0]
                if t != name:
                    out.append(Import(name, t, rel, node.lineno))
    return out


def layer_of(module: str) -> int | None:
    """Index in :data:`LAYERS` (0 = top) of ``module``, or ``None`` if no layer names it."""
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if module == p or (p != "timem" and module.startswith(p + ".")):
                if best is None or len(p) > best[0]:
                    best = (len(p), i)
    return None if best is None else best[1]


def component(module: str) -> str:
    """``timem.recall.leaves`` -> ``timem.recall``; a top-level module is its own component."""
    return ".".join(module.split(".")[:2])


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == v:
                        break
                if len(scc) > 1:
                    found.append(sorted(scc))
    return found


def violations(root: Path) -> list[str]:
    """What breaks the rules of this module's docstring in the tree at ``root``, one message each."""
    mods = module_files(root)
    found = imports(root, mods)
    problems = [f"{m} ({mods[m].relative_to(root)}) is in no layer: add it to LAYERS in tests/test_layers.py"
                for m in mods if layer_of(m) is None]
    for imp in found:
        a, b = layer_of(imp.importer), layer_of(imp.target)
        if a is not None and b is not None and b < a:
            problems.append(f"upward import: {imp.where()}: layer '{LAYERS[a][0]}' imports from the higher layer "
                            f"'{LAYERS[b][0]}'; imports run downhill only")
    for level, key in (("module", lambda m: m), ("component", component)):
        edges: dict[str, set[str]] = defaultdict(set)
        witness: dict[tuple[str, str], Import] = {}
        for imp in found:
            a, b = key(imp.importer), key(imp.target)
            if a != b:
                edges[a].add(b)
                witness.setdefault((a, b), imp)
        for scc in cycles(edges):
            inside = [witness[(a, b)].where() for a in scc for b in sorted(edges[a]) if b in scc]
            problems.append(f"{level} import cycle between {', '.join(scc)}: " + "; ".join(inside))
    return problems


def test_imports_run_downhill_and_nothing_imports_itself_back():
    problems = violations(REPO)
    assert not problems, "\n".join(problems)


def test_every_layer_prefix_names_existing_code():
    mods = module_files(REPO)
    stale = [p for _, prefixes in LAYERS for p in prefixes
             if not any(m == p or m.startswith(p + ".") for m in mods)]
    assert not stale, f"LAYERS names code that does not exist: {stale}"


def test_the_readme_draws_the_same_layer_order():
    """The README's Architecture block names the layers top to bottom, one line each (continuation lines indented)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("\n## Architecture\n", 1)[1].split("```\n", 2)[1]
    drawn = [re.split(r"\s{2,}", line)[0] for line in block.splitlines() if line.strip() and not line.startswith(" ")]
    assert drawn == [name for name, _ in LAYERS]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize("files, expected", [
    # the store importing a pipeline lazily, inside a function
    ({"timem/__init__.py": "", "timem/store/__init__.py": "",
      "timem/store/x.py": "def f():\n    from timem.recall.y import z\n",
      "timem/recall/__init__.py": "", "timem/recall/y.py": "z = 1\n"},
     ["upward import: timem/store/x.py:2 (timem.store.x -> timem.recall.y): layer 'embed and store' imports "
      "from the higher layer 'pipelines'"]),
    # a TYPE_CHECKING import closing a cycle inside one package (relative import)
    ({"timem/__init__.py": "", "timem/store/__init__.py": "", "timem/store/a.py": "from timem.store import b\n",
      "timem/store/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n"},
     ["module import cycle between timem.store.a, timem.store.b: timem/store/a.py:1 (timem.store.a -> "
      "timem.store.b); timem/store/b.py:3 (timem.store.b -> timem.store.a)"]),
    # two pipelines importing each other: no module cycle, but a component cycle
    ({"timem/__init__.py": "", "timem/recall/__init__.py": "", "timem/recall/a.py": "import timem.memory.b\n",
      "timem/memory/__init__.py": "", "timem/memory/b.py": "", "timem/memory/c.py": "from timem.recall.a import x\n"},
     ["component import cycle between timem.memory, timem.recall"]),
    ({"timem/__init__.py": "", "timem/newthing.py": ""}, ["timem.newthing (timem/newthing.py) is in no layer"]),
])
def test_the_check_names_each_offending_import(tmp_path, files, expected):
    problems = violations(_tree(tmp_path, files))
    assert len(problems) == len(expected), problems
    for got, want in zip(problems, expected, strict=True):
        assert got.startswith(want), (got, want)
