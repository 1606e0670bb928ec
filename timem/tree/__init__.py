"""Time windows of the Temporal Memory Tree and temporal containment checks."""
