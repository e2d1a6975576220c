"""Old path of the Dask executor: :mod:`firmware_sim.engine.executors` (kept because
users and docs name it). ``run_campaign(.., client=...)`` is
``run_campaign(.., executor=DaskExecutor(client))``."""

from .engine.executors import CHUNK_BATCHES, MAX_IN_FLIGHT, DaskExecutor, check_client

__all__ = ["DaskExecutor", "check_client", "CHUNK_BATCHES", "MAX_IN_FLIGHT"]
