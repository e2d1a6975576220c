"""Old path of the seeded batches and threads: :mod:`firmware_sim.engine.batches`
(``export.firmware`` takes ``n_threads`` from here)."""

from .engine.batches import MAX_ROWS, SUB_ROWS, SeededBatches, Ticker, count_labels, n_threads, \
    repeat_rows, run_ranges, run_seeded_batches, seed_sequence

__all__ = ["n_threads", "run_ranges", "run_seeded_batches", "seed_sequence", "SeededBatches",
           "Ticker", "repeat_rows", "count_labels", "SUB_ROWS", "MAX_ROWS"]
