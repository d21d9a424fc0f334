"""A worker freezes what start-up built out of the garbage collector's full collections while
it serves (app._freeze_start_up_objects), and thaws it when its lifespan ends."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

from fastapi.testclient import TestClient

from pedrag.runtime.service.app import ServiceSettings, create_app


def test_start_up_objects_are_frozen_while_the_service_runs_and_thawed_after() -> None:
    gc.unfreeze()
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(ServiceSettings(db=str(Path(folder) / "s.db")), backend=None)
        with TestClient(app) as client:
            assert client.get("/healthz").status_code == 200
            # The app, its compiled theories, the modules: far more than a stray few.
            assert gc.get_freeze_count() > 10_000
        assert gc.get_freeze_count() == 0


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_garbage_from_before_the_freeze_is_collected_not_kept() -> None:
    gc.unfreeze()
    gc.disable()  # only a collection frees the cycle: the one before the freeze
    try:
        _Cycle()
        with tempfile.TemporaryDirectory() as folder:
            app = create_app(ServiceSettings(db=str(Path(folder) / "s.db")), backend=None)
            with TestClient(app):
                gc.unfreeze()  # what the freeze kept is tracked again, so it can be seen
                kept = [item for item in gc.get_objects() if isinstance(item, _Cycle)]
        assert kept == []
    finally:
        gc.enable()
