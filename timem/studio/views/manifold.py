"""Manifold page: thin script; the logic is timem.ui.manifold.render (routed by app.py)."""

from timem.ui.manifold import render
from timem.ui.router import run_page

run_page(render)
