"""pedrag.runtime.learning: The learning loop: grading, mastery, the code runner, exercise material."""
