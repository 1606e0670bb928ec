"""timeline page (logic in timem.ui.timeline)."""

from timem.ui.timeline import render

render()
