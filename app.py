"""Thin entry for ``streamlit run app.py`` from a checkout: runs the packaged studio, :mod:`timem.studio`
(``timem/studio/app.py``)."""

import runpy

from timem.ui.router import APP_PY

runpy.run_path(str(APP_PY), run_name="__main__")
