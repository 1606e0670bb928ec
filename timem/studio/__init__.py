"""The studio's Streamlit entry script (``app.py``) and its page scripts (``views/``); logic is in :mod:`timem.ui`.

The paths that code below the studio needs are defined there: the entry script's (:data:`timem.ui.router.APP_PY`)
and the bundled demo's (:data:`timem.datasets.DEMO_FILE`).
"""
