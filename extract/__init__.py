"""pedrag.extract; the folder is reached only through the pedrag/extract symlink."""

if __name__ != "pedrag.extract":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.extract, not {__name__}")
