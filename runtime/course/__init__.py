"""pedrag.runtime.course: Course materials: the index, passage vectors, passages and grounded turns."""
