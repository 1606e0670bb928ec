"""Chat page: thin script; the logic is timem.ui.chat.render (routed by app.py)."""

from timem.ui.chat import render
from timem.ui.router import run_page

run_page(render)
