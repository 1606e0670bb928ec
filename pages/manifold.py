"""manifold page (logic in timem.ui.manifold)."""

from timem.ui.manifold import render

render()
