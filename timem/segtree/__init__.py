"""SegTreeMem's own segment tree (arXiv 2606.04555) as the recall index (the default,
``recall_index = "segtree"``; "timem" uses the TiMem tree).

:mod:`timem.segtree.tree` is the pure online insertion on the right frontier, :mod:`timem.store.segtree_tables`
its persistence in the DuckDB file, :mod:`timem.segtree.recall` relevance propagation over it, reading the
tree through :mod:`timem.store.segtree_view` (each user's internal nodes cached per tree version).
"""
