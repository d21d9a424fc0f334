"""pedrag.runtime.policy: The compiled policy and its execution: loading, generated matchers, the policy core, the rule engine, theory sets."""
