"""defsent: sentence embeddings from dictionary definitions (DefSent+)."""

__version__ = "0.1.0"
