"""Timeline page: thin script; the logic is timem.ui.timeline.render (routed by app.py)."""

from timem.ui.router import run_page
from timem.ui.timeline import render

run_page(render)
