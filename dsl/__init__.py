"""pedrag.dsl; the folder is reached only through the pedrag/dsl symlink."""

if __name__ != "pedrag.dsl":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.dsl, not {__name__}")
