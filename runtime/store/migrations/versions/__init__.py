"""The revisions, oldest first: ``r0001_initial``, ``r0002_tenants``, ``r0003_learner_goals``."""
