"""Text embedders behind the :class:`timem.embed.protocol.Embedder` protocol."""
