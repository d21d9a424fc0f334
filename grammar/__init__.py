"""pedrag.grammar; the folder is reached only through the pedrag/grammar symlink."""

if __name__ != "pedrag.grammar":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.grammar, not {__name__}")
