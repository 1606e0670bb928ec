"""recall_inspector page (logic in timem.ui.inspector)."""

from timem.ui.inspector import render

render()
