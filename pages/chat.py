"""chat page (logic in timem.ui.chat)."""

from timem.ui.chat import render

render()
