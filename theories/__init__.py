"""pedrag.theories; the folder is reached only through the pedrag/theories symlink."""

if __name__ != "pedrag.theories":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.theories, not {__name__}")
