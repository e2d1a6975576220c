"""The device contract: one interface for every model kind, and the kind registry.

A device is an image (a :class:`~firmware_sim.artifact.Container`) plus one
function. Every model kind implements :class:`Device`:

``firmware_sim.load(source)``
    opens any container (path, bytes or ``Container``) and returns the
    device for its kind (the registry below maps kind -> class).
``device.encode(X)``
    the host side: what travels over the wire, one row (a *frame*) per
    point. Protected naive Bayes sends the repeated feature bits (uint8
    0/1); ECOC and SSBC send int16 fixed-point features.
``device.infer(frames)``
    the device side: reads only the image's arrays and the frames and
    returns an :class:`Inference` (labels as class indices, plus the kind's
    decision integers).

Faults hit a device in three places (``SITES``) and nowhere else:

* ``"wire"``: channel faults on the frames' bits (int16 frames travel as
  16 bits each, least significant first: :meth:`Device.wire_bits`);
* ``"image"``: parameter upsets; the faulty image is re-loaded with
  :func:`load` and ``infer`` re-runs on the clean host's frames;
* ``"intermediate"``: noise on the intermediate results the device computes
  (:meth:`Device.stage`, then :meth:`Device.finish`): the decoded feature
  bits of naive Bayes, the learner outputs of ECOC (symbols for N-ary
  codes), the code bits of SSBC.

``infer(frames)`` equals ``finish(stage(frames))`` label for label (tested).
Campaigns, upset tables and ``simulate`` are one engine over this contract
(:mod:`firmware_sim.campaign`).

Adding a model kind: one module defining a ``Device`` subclass and a call
``register_kind(name, code, cls)`` (see ``docs/architecture.md``).

Imports numpy only.
"""

from dataclasses import dataclass, field

import numpy as np

from . import artifact
from .artifact import Container, ContainerError, read_container
from .errors import FrameError

__all__ = ["Device", "Inference", "SimulationResult", "SITES", "load", "register_kind",
           "device_kinds"]

#: Where a fault may act (see the module docstring).
SITES = ("wire", "intermediate", "image")

_DEVICES = {}


@dataclass(frozen=True)
class Inference:
    """What :meth:`Device.infer` returns.

    Attributes
    ----------
    labels : ndarray of int64, shape (t,), or None
        Class indices (None for an SSBC device without a code table: it
        computes codes, not labels).
    decision : dict of str -> ndarray
        The kind's decision integers: ``accumulator`` (naive Bayes);
        ``symbols`` and ``distances`` (ECOC: learner outputs and doubled
        Hamming distances to every codeword); ``code_bits`` and, with a
        table, ``nearest_distance`` (SSBC).
    """

    labels: object
    decision: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SimulationResult:
    """Outcome of :func:`firmware_sim.simulate`: every point ``n_trials`` times
    through a binary symmetric channel at one site.

    Attributes
    ----------
    same : ndarray of int64, shape (t,)
        Per point, the number of trials whose label equals the clean label.
    clean_labels : ndarray of int64, shape (t,)
        Labels of the noiseless points.
    n_trials : int
        Trials per point.
    eps_bits : ndarray of float64, shape (L,)
        Flip probability of every faulted bit (the channel bits at the wire,
        the intermediate results at ``"intermediate"``).
    correct : ndarray of int64, shape (t,), or None
        Per point, trials whose label equals ``y`` (when ``y`` was given).

    Notes
    -----
    Unpacks as a pair: ``same, clean_labels = simulate(...)``.
    """

    same: np.ndarray
    clean_labels: np.ndarray
    n_trials: int
    eps_bits: np.ndarray
    correct: object = None

    def __iter__(self):
        return iter((self.same, self.clean_labels))

    @property
    def same_rate(self):
        """Per-point estimate of the same-classification probability (SCP)."""
        return self.same / self.n_trials

    @property
    def mean_same_rate(self):
        """Mean SCP estimate over the points."""
        return float(self.same.sum() / (self.same.size * self.n_trials))

    @property
    def accuracy(self):
        """Mean accuracy under noise against ``y`` (None if ``y`` was not given)."""
        if self.correct is None:
            return None
        return float(self.correct.sum() / (self.correct.size * self.n_trials))



class Device:
    """Base class of every model kind's device (see the module docstring).

    Subclasses set ``kind`` (the container kind), ``frame_dtype`` (uint8
    bits or int16 features) and ``stage_symbols`` (alphabet of the
    intermediate results: 2 for bits, N for an N-ary ECOC code), and
    implement ``__init__(container)`` (validate, refuse with
    ``ContainerError``), ``encode``, ``infer``, ``stage``, ``finish``,
    ``frame_width`` and ``resources``. ``labels`` may be overridden by a
    faster path that returns ``infer(frames).labels``.
    """

    kind = None
    frame_dtype = np.dtype(np.uint8)
    stage_symbols = 2
    #: Where :meth:`simulate` and campaigns put bit faults unless told: the
    #: noise the kind is designed to tolerate (naive Bayes: the wire; ECOC:
    #: its learner outputs; SSBC: its code bits).
    default_site = "wire"

    def simulate(self, X, eps, n_trials, random_state=None, y=None, site=None, n_jobs=None,
                 progress=None):
        """Every point ``n_trials`` times through a BSC at ``site``
        (:func:`firmware_sim.simulate`: bounded memory, progress between
        batches, Ctrl-C stops it)."""
        from .campaign import simulate
        return simulate(self, X, eps, n_trials, random_state=random_state, y=y, site=site,
                        n_jobs=n_jobs, progress=progress)

    # -- the contract ---------------------------------------------------------
    def encode(self, X):
        raise NotImplementedError

    def infer(self, frames):
        raise NotImplementedError

    def stage(self, frames):
        raise NotImplementedError

    def finish(self, intermediate):
        raise NotImplementedError

    @property
    def frame_width(self):
        """Entries per frame (bits for uint8 frames, features for int16 frames)."""
        raise NotImplementedError

    def labels(self, frames):
        """Class indices of frames: ``infer(frames).labels``."""
        return self.infer(frames).labels

    # -- helpers every kind shares --------------------------------------------
    def check_frames(self, frames):
        """Frames as a C-contiguous 2-D array of ``frame_dtype`` and ``frame_width``
        columns; a frame the device cannot read raises :class:`FrameError`."""
        a = np.asarray(frames)
        if a.ndim != 2 or a.shape[1] != self.frame_width:
            raise FrameError(f"{self.kind} frames must have shape (n_samples, "
                             f"{self.frame_width}); got {a.shape}")
        if self.frame_dtype == np.uint8:
            if a.dtype != np.uint8 and not (a.dtype == np.bool_
                                            or np.issubdtype(a.dtype, np.integer)):
                raise FrameError(f"{self.kind} frames must be 0/1 bits (uint8); got dtype "
                                 f"{a.dtype}")
            if a.size and (a.min() < 0 or a.max() > 1):     # before any cast: 256 is not 0
                raise FrameError(f"{self.kind} frames must be 0/1 bits")
            a = a.astype(np.uint8, copy=False)
        elif a.dtype != self.frame_dtype:
            raise FrameError(f"{self.kind} frames must be {self.frame_dtype} fixed-point "
                             f"features (device.encode(X) makes them); got dtype {a.dtype}")
        return np.ascontiguousarray(a)

    @property
    def wire_width(self):
        """Bits per frame on the wire."""
        return self.frame_width * 8 * self.frame_dtype.itemsize if self.frame_dtype != np.uint8 \
            else self.frame_width

    def wire_bits(self, frames):
        """Frames as the bits on the wire, uint8 0/1 of shape (t, wire_width):
        bit frames as they are; int16 frames 16 bits per value, least
        significant first (little-endian bytes)."""
        frames = self.check_frames(frames)
        if self.frame_dtype == np.uint8:
            return frames
        raw = frames.astype(self.frame_dtype.newbyteorder("<"), copy=False).view(np.uint8)
        return np.ascontiguousarray(np.unpackbits(raw, axis=1, bitorder="little"))

    def frames_from_wire(self, bits):
        """Inverse of :meth:`wire_bits`."""
        if self.frame_dtype == np.uint8:
            return bits
        raw = np.packbits(np.asarray(bits, np.uint8), axis=1, bitorder="little")
        return np.ascontiguousarray(raw).view(self.frame_dtype.newbyteorder("<")) \
            .astype(self.frame_dtype, copy=False)


def register_kind(name, code, cls):
    """Register a model kind: container kind ``name`` with header code ``code``
    is read by device class ``cls`` (a :class:`Device` subclass).

    Re-registering the same (name, code, class) is a no-op; anything else that
    clashes raises ``ValueError``.
    """
    if not (isinstance(cls, type) and issubclass(cls, Device)):
        raise TypeError(f"cls must be a Device subclass; got {cls!r}")
    kinds = artifact._KINDS
    if kinds.get(name, code) != code or any(k != name and v == code for k, v in kinds.items()):
        raise ValueError(f"kind {name!r} / code {code} clashes with the registered kinds "
                         f"{dict(kinds)}")
    if _DEVICES.get(name, cls) is not cls:
        raise ValueError(f"kind {name!r} is already read by {_DEVICES[name].__name__}")
    kinds[name] = int(code)
    artifact._KIND_NAMES[int(code)] = name
    _DEVICES[name] = cls
    cls.kind = name
    return cls


def device_kinds():
    """Registered kind name -> device class (a copy)."""
    return dict(_DEVICES)


def load(source):
    """Open any container and return the device for its kind.

    Parameters
    ----------
    source : str, os.PathLike, bytes or Container
        A container file, its bytes, or a parsed container. Loading parses
        and validates only (no code is executed); a malformed or inconsistent
        image raises :class:`~firmware_sim.artifact.ContainerError`.

    Returns
    -------
    Device

    Examples
    --------
    >>> from firmware_sim.naive_bayes import ProtectedNBDevice
    >>> dev = load(ProtectedNBDevice.from_arrays([2], -1, [1]).container.tobytes())
    >>> type(dev).__name__, dev.infer(dev.encode([[0], [1]])).labels.tolist()
    ('ProtectedNBDevice', [0, 1])
    """
    if isinstance(source, Device):
        return source
    container = source if isinstance(source, Container) else read_container(source)
    cls = _DEVICES.get(container.kind)
    if cls is None:
        raise ContainerError(f"no device is registered for container kind {container.kind!r}; "
                             f"known: {sorted(_DEVICES)}")
    return cls(container)
