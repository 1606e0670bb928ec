"""Recall inspector page: thin script; the logic is timem.ui.inspector.render (routed by app.py)."""

from timem.ui.inspector import render
from timem.ui.router import run_page

run_page(render)
