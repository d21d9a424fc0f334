"""pedrag.runtime; the folder is reached only through the pedrag/runtime symlink."""

if __name__ != "pedrag.runtime":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.runtime, not {__name__}")
