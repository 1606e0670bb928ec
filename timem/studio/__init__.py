"""The studio's Streamlit entry script (``app.py``) and its page scripts (``views/``); logic is in :mod:`timem.ui`."""

from pathlib import Path

#: the studio's entry script inside the installed package (``timem studio`` runs it)
APP_PY = Path(__file__).resolve().parent / "app.py"
#: the bundled demo conversation (JSONL, see ``timem/data/README.md``)
DEMO_FILE = Path(__file__).resolve().parents[1] / "data" / "demo_conversation.jsonl"
