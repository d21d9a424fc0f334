"""The revisions, oldest first: ``r0001_initial``, ``r0002_tenants``."""
