"""memories page (logic in timem.ui.memories)."""

from timem.ui.memories import render

render()
