"""pedrag.runtime.detect: The deterministic detector: does a drafted reply reveal the answer, solution code or an encoding of either."""
