"""Resource accounting shared by the device runtimes (flash, RAM).

Every device model reports flash, RAM and operations per inference with the
same keys; these helpers fix the memory model:

* flash: the container as stored (:attr:`Container.nbytes`); the arrays an
  inference reads are counted separately (:func:`array_bytes`).
* RAM: what one inference holds besides parameters (which are read in place
  from flash): the received bits packed 8 per byte, plus named scalars.
"""

__all__ = ["packed_bytes", "array_bytes", "ram_model"]


def packed_bytes(n_bits):
    """Bytes holding ``n_bits`` bits packed 8 per byte.

    Examples
    --------
    >>> packed_bytes(0), packed_bytes(8), packed_bytes(9)
    (0, 1, 2)
    """
    return (int(n_bits) + 7) // 8


def array_bytes(container, names):
    """Total ``nbytes`` of the named arrays of a container."""
    return int(sum(container.arrays[name].nbytes for name in names))


def ram_model(n_bits, scalars):
    """RAM of one inference: a packed receive buffer of ``n_bits`` plus scalars.

    Parameters
    ----------
    n_bits : int
        Received bits held during the inference.
    scalars : dict of str to int
        Working variables and their sizes in bytes.

    Returns
    -------
    dict
        ``ram_bytes`` (packed), ``ram_bytes_unpacked`` (one byte per bit) and
        ``ram_breakdown`` (``received_bits_packed`` plus each scalar).

    Examples
    --------
    >>> ram_model(9, {"accumulator": 4})["ram_bytes"]
    6
    """
    breakdown = {"received_bits_packed": packed_bytes(n_bits), **scalars}
    scalar_bytes = sum(scalars.values())
    return {
        "ram_bytes": sum(breakdown.values()),
        "ram_bytes_unpacked": int(n_bits) + scalar_bytes,
        "ram_breakdown": breakdown,
    }
