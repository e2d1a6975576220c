"""Exhaustive single-event-upset analysis: every stored bit, flipped one at a time.

A parameter upset (:class:`~firmware_sim.faults.ParameterUpset`) is drawn at
random in a campaign; here every targeted bit of the artifact is flipped in
turn, the device is re-loaded from that image exactly as a campaign does and
every point is run through it. The result answers two questions:

* **which bits matter**: the label-change rate of each bit, per array and the
  most critical bits (what to protect with ECC or a duplicate copy first);
* **what a campaign will measure**, exactly, for one upset per image
  (``ParameterUpset(count=1)``: the mean over the bits), and within a
  certified interval for independent upsets at a per-bit ``rate`` (zero or
  one upset exactly, two or more bounded by their probability):
  :meth:`UpsetTable.predict`.

Outcomes follow :func:`firmware_sim.campaign.run_campaign` and the device
contract (:mod:`firmware_sim.device`): the frames are what the clean host
sends (``device.encode(X)``); each faulty image is opened with
:func:`firmware_sim.load` and ``infer`` re-runs on them, so an upset reaches
whatever reads the upset array (naive Bayes weights, ECOC learner weights,
thresholds and trees, SSBC anchors, projection and table). An image the
loader refuses (``ContainerError``) or a device that cannot read the clean
frame (``FrameError``: e.g. an upset repetition count changes the frame
length) is *refused*, and counts as a changed label.

Cost: one re-load and one inference of every point per targeted bit,
so it is meant for the parameter arrays of small models or for chosen
arrays (``arrays=``); ``max_bits`` guards against a long run. The loop
returns to Python after every bit: ``progress`` is called there, and Ctrl-C
stops it at once.

Imports numpy only.
"""

from dataclasses import dataclass

import numpy as np

from ._limits import check_allocation
from .contract import load
from .engine.batches import Ticker
from .engine.streams import as_device, clean_labels
from .errors import ContainerError, DeviceError, FrameError
from .faults import ParameterUpset

__all__ = ["UpsetTable", "single_upset_table"]


@dataclass
class UpsetTable:
    """Outcome of every single-bit upset of the targeted bits.

    Attributes
    ----------
    arrays : list of (str, int, int, str)
        ``(name, first bit, number of bits, dtype)`` of each targeted array
        in bit order (bit k is bit ``k % 8``, LSB first, of byte ``k // 8``).
    refused : bool ndarray (n_bits,)
        The upset image was refused (or the device rejected the frame).
    same : int ndarray (n_bits,)
        Points whose label equals the clean label (0 when refused).
    correct : int ndarray (n_bits,) or None
        Points whose label equals ``y`` (0 when refused), given ``y``.
    n_points : int
    clean_accuracy : float or None
        Accuracy of the clean device, given ``y``.
    checked : bool
        The table is for checked upsets (any byte of the image; every single
        upset is then refused by the CRC).
    """

    arrays: list
    refused: np.ndarray
    same: np.ndarray
    correct: object
    n_points: int
    clean_accuracy: object
    checked: bool = False

    @property
    def n_bits(self):
        return int(self.refused.shape[0])

    @property
    def change_rate(self):
        """Per bit, the fraction of points whose label changes (1 when refused)."""
        return 1.0 - self.same / self.n_points

    def single_upset(self):
        """Expected outcome of a campaign with exactly one upset per image."""
        out = {"same_rate": float(self.same.mean() / self.n_points),
               "refused_rate": float(self.refused.mean())}
        if self.correct is not None:
            out["accuracy"] = float(self.correct.mean() / self.n_points)
        return out

    def per_array(self):
        """Per targeted array: bits, refused fraction, mean and worst change rate."""
        rows = []
        ch = self.change_rate
        for name, start, n, dtype in self.arrays:
            sl = slice(start, start + n)
            rows.append({"array": name, "dtype": dtype, "bits": n,
                         "refused": float(self.refused[sl].mean()) if n else 0.0,
                         "mean_change_rate": float(ch[sl].mean()) if n else 0.0,
                         "max_change_rate": float(ch[sl].max()) if n else 0.0})
        return rows

    def critical_bits(self, k=10):
        """The ``k`` bits whose upset changes the most labels (refused first).

        Returns a list of dicts: ``array``, ``element`` (flat index in the
        array), ``bit`` (within the element, 0 = least significant),
        ``change_rate``, ``refused``.
        """
        ch = self.change_rate
        order = np.lexsort((np.arange(self.n_bits), -ch))[:int(k)]
        out = []
        for b in order:
            name, start, n, dtype = next(a for a in self.arrays if a[1] <= b < a[1] + a[2])
            size = np.dtype(dtype).itemsize
            rel = int(b) - start
            byte, bit = rel // 8, rel % 8
            # bytes of an element are little-endian in the image
            out.append({"array": name, "element": byte // size,
                        "bit": 8 * (byte % size) + bit, "change_rate": float(ch[b]),
                        "refused": bool(self.refused[b])})
        return out

    def predict(self, fault):
        """What a campaign with ``fault`` (a ParameterUpset on the same bits) measures.

        ``count`` 0 or 1: exact. ``rate``: zero upsets (probability
        ``(1 - rate)^n``) keep every label, one upset (``n rate (1 - rate)^(n-1)``)
        behaves as :meth:`single_upset`, and two or more are only bounded,
        so ``same_rate`` is the midpoint of the certified interval
        ``same_rate_interval`` of width P(two or more upsets).
        ``count`` >= 2: not available (two upsets can interact).

        Returns
        -------
        dict
            ``available``; then ``same_rate``, ``same_rate_interval``,
            ``refused_rate_interval`` and, with labels, ``accuracy`` and
            ``accuracy_interval``; else ``reason``.
        """
        if not isinstance(fault, ParameterUpset):
            return {"available": False, "reason": "the table answers ParameterUpset faults"}
        if bool(fault.checked) != self.checked:
            return {"available": False, "reason": "the table was made for "
                    f"checked={self.checked} upsets"}
        n = self.n_bits
        if fault.count is not None:
            if fault.count >= 2:
                return {"available": False, "reason": f"{fault.count} upsets per image can "
                        "interact; exact only for 0 or 1 (or a small rate)"}
            p0, p1 = (1.0, 0.0) if fault.count == 0 else (0.0, 1.0)
        else:
            r = float(fault.rate)
            p0 = (1.0 - r) ** n
            p1 = n * r * (1.0 - r) ** (n - 1) if n else 0.0
        rest = max(0.0, 1.0 - p0 - p1)
        one = self.single_upset()
        same_lo = p0 + p1 * one["same_rate"]
        out = {"available": True, "same_rate": same_lo + rest / 2,
               "same_rate_interval": [same_lo, same_lo + rest],
               "refused_rate_interval": [p1 * one["refused_rate"],
                                         p1 * one["refused_rate"] + rest],
               "p_more_than_one_upset": rest, "targeted_bits": n,
               "method": "exhaustive single-bit upsets" + (
                   "" if rest == 0 else "; two or more upsets bounded by their probability")}
        if self.correct is not None:
            acc_lo = p0 * self.clean_accuracy + p1 * one["accuracy"]
            out["accuracy"] = acc_lo + rest / 2
            out["accuracy_interval"] = [acc_lo, acc_lo + rest]
        return out


def single_upset_table(device, X, *, arrays=None, checked=False, y=None, max_bits=1 << 14,
                       progress=None):
    """Flip every targeted bit of ``device.container`` in turn and run every point.

    Parameters
    ----------
    device : Device, Container, path or bytes
        Any device of the contract (:mod:`firmware_sim.device`).
    X : array-like
        The points (what ``device.encode`` takes).
    arrays : sequence of str, optional
        Arrays to upset (default: every array), as in ParameterUpset.
    checked : bool
        Upsets anywhere in the image with the CRC verified (each one is then
        refused; the table says so) instead of in the arrays' data.
    y : array-like of int, optional
        True labels, for the accuracy.
    max_bits : int
        Refuse to run over more targeted bits than this.
    progress : callable, optional
        ``progress(done, total, "bits")`` between bits (about ten times a
        second at most, and at the end), in the calling thread; an exception
        it raises (``KeyboardInterrupt`` included) stops the table.

    Returns
    -------
    UpsetTable

    Raises
    ------
    DeviceError
        More targeted bits than ``max_bits`` (the message gives both and
        suggests ``arrays=``), unknown array names, ``y`` of the wrong length.
    SizeLimitError
        The table itself (17 bytes per targeted bit) above the size limit,
        however large ``max_bits`` is.

    Examples
    --------
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> from firmware_sim.faults import ParameterUpset
    >>> dev = ProtectedNBDevice.from_arrays([3, -2], 0, [1, 0])
    >>> tab = single_upset_table(dev, [[0, 0], [1, 0], [0, 1], [1, 1]], arrays=["weights"])
    >>> tab.n_bits, [a["array"] for a in tab.per_array()]
    (64, ['weights'])
    >>> round(tab.predict(ParameterUpset(count=1, arrays=["weights"]))["same_rate"], 4)
    0.8516
    """
    device = as_device(device)
    fault = ParameterUpset(count=1, arrays=arrays, checked=checked)
    container = device.container
    n = fault.targeted_bits(container)
    if n > max_bits:
        raise DeviceError(f"{n} targeted bits exceed max_bits={max_bits}: one re-load per bit; "
                          "choose the arrays to upset (arrays=, CLI --arrays; the container "
                          f"has {sorted(container.arrays)}) or raise max_bits (--max-bits)")
    check_allocation(f"{n:,} targeted bits", 17 * n, what="the upset table (refused, same and "
                     "correct per bit)", hint="choose the arrays to upset (arrays=, CLI --arrays)")
    if checked:
        layout = [("__image__", 0, n, "uint8")]
    else:
        layout, start = [], 0
        for name, a in fault.targets(container).items():
            layout.append((name, start, 8 * a.nbytes, str(a.dtype)))
            start += 8 * a.nbytes
    frames = device.encode(X)
    clean = clean_labels(device, frames)
    t = clean.shape[0]
    if y is not None:
        y = np.asarray(y).astype(np.int64).reshape(-1)
        if y.shape[0] != t:
            raise DeviceError(f"y must have shape ({t},), one label per point; got {y.shape}")
    refused = np.zeros(n, bool)
    same = np.zeros(n, np.int64)
    correct = None if y is None else np.zeros(n, np.int64)
    ticker = Ticker(progress, n)
    for b in range(n):
        try:
            dev = load(fault.apply_positions(container, [b]))
            labels = np.asarray(dev.labels(frames), np.int64)
        except (ContainerError, FrameError):
            refused[b] = True
        else:
            same[b] = int((labels == clean).sum())
            if y is not None:
                correct[b] = int((labels == y).sum())
        ticker(b + 1, "bits")
    acc = None if y is None else float(np.mean(clean == y))
    return UpsetTable(arrays=layout, refused=refused, same=same, correct=correct, n_points=t,
                      clean_accuracy=acc, checked=bool(checked))

