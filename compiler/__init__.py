"""pedrag.compiler; the folder is reached only through the pedrag/compiler symlink."""

if __name__ != "pedrag.compiler":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.compiler, not {__name__}")
