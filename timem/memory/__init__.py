"""The memory layer above the Temporal Memory Tree: facts, preferences, events and plans with supersession,
decay and forgetting (issue 14; TiMem's semantic memories with conflict override)."""
