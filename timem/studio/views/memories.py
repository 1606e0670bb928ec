"""Memories page: thin script; the logic is timem.ui.memories.render (routed by app.py)."""

from timem.ui.memories import render
from timem.ui.router import run_page

run_page(render)
