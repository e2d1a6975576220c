"""What the bridge knows per model kind: how the command line gets its data rows.

The device side registers kinds in :mod:`firmware_sim.device` (container kind
-> device class); the bridge adds, per kind, a *rows* function
``rows(container, dataset, split) -> (X, y, name)`` that turns the dataset a
command names (a bundled name, a CSV path or an ``(X, y)`` pair) into the
inputs ``device.encode`` takes and the true labels as class indices. A new
model kind registers one here (see ``docs/architecture.md``).
"""

__all__ = ["register_rows", "kind_rows"]

_ROWS = {}
_loaded = []


def register_rows(kind, rows):
    """Register the rows function of model kind ``kind``."""
    if not callable(rows):
        raise TypeError(f"rows must be callable; got {rows!r}")
    _ROWS[kind] = rows
    return rows


def kind_rows(kind):
    """The rows function of ``kind`` (ValueError naming the known kinds if none)."""
    _builtin()
    if kind not in _ROWS:
        raise ValueError(f"the command line has no data rows for {kind!r} artifacts "
                         f"(known: {sorted(_ROWS)}); register them with "
                         "export.registry.register_rows")
    return _ROWS[kind]


def _builtin():
    if _loaded:
        return
    _loaded.append(True)
    from export.data import binary_rows, table_rows

    for kind, rows in (("protected_nb", binary_rows), ("ecoc", table_rows),
                       ("ssbc", table_rows), ("forest", table_rows)):
        _ROWS.setdefault(kind, rows)
