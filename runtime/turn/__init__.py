"""pedrag.runtime.turn: One supervised turn: the tutor and its stages, session state, audit, budget."""
