"""pedrag.runtime.llm: Model access: the backend interface, the OpenAI-compatible and offline backends, pricing, scripted personas."""
