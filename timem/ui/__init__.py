"""Streamlit helpers of the studio (the only package besides :mod:`timem.studio` that imports streamlit).

``state`` (config, engine, user, test injection), ``sidebar``, ``feedback`` (progress, errors) and one
module per page (``chat``, ``timeline``, ``inspector``, ``manifold``, ``memories``) whose ``render()``
the thin scripts in ``timem/studio/views/`` call. Plot data and figures live in :mod:`timem.viz` (no streamlit).
"""
