"""The device contract: what every model kind implements, and the kind registry.

A device is an image (a :class:`~firmware_sim.artifact.Container`) plus one
function. Every model kind is a :class:`BaseDevice` subclass (in practice a
:class:`firmware_sim.device.Device`, which adds the engine's ``simulate`` as
a method), registered once with :func:`register_kind`:

``firmware_sim.load(source)``
    opens any container (path, bytes or ``Container``) and returns the
    device for its kind (the registry below maps kind -> class).
``device.encode(X)``
    the host side: what travels over the wire, one row (a *frame*) per
    point: uint8 0/1 bits or int16 fixed-point features.
``device.infer(frames)``
    the device side: reads only the image's arrays and the frames and
    returns an :class:`Inference` (labels as class indices, plus the kind's
    decision integers).

Faults hit a device in three places (:data:`SITES`) and nowhere else:

* ``"wire"``: channel faults on the frames' bits (int16 frames travel as
  16 bits each, least significant first: :meth:`BaseDevice.wire_bits`);
* ``"image"``: parameter upsets; the faulty image is re-loaded with
  :func:`load` and ``infer`` re-runs on the clean host's frames;
* ``"intermediate"``: noise on the intermediate results the device computes
  (:meth:`BaseDevice.stage`, then :meth:`BaseDevice.finish`).

``infer(frames)`` equals ``finish(stage(frames))`` label for label (tested).

**Everything shared code asks of a kind is a hook of** :class:`BaseDevice`
(class attributes and methods with defaults, listed in its docstring): the
engine (:mod:`firmware_sim.engine`), the loader, the profiles
(:mod:`firmware_sim.profiles`) and the firmware writer (``export.firmware``)
call these hooks and never name a kind.

Imports numpy and the container module only.
"""

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, ClassVar, Mapping, Optional, Union

import numpy as np

from .artifact import LAYER_NAMES, Container, read_container, register_kind_code
from .channel import check_channel_eps
from .errors import ContainerError, DeviceError, FrameError

__all__ = ["BaseDevice", "Inference", "SITES", "BatchRunner", "register_kind", "device_kinds",
           "load", "register_layer"]

#: Where a fault may act (see the module docstring).
SITES = ("wire", "intermediate", "image")

#: A batch runner (:meth:`BaseDevice.bit_fault_runner`): ``run(start, nrows, rng,
#: same, correct)`` adds, for rows ``[start, start + nrows)`` of the (point,
#: trial) stream, the trials labelled as the clean label (and as ``y``) to the
#: per-point int64 counts ``same`` (and ``correct``).
BatchRunner = Callable[[int, int, np.random.Generator, np.ndarray, np.ndarray], None]

_DEVICES = {}
#: Protection layers (reserved array name -> wrap(device, container) -> device):
#: a container holding the array is loaded as its kind's device wrapped by the
#: layer (:func:`register_layer`; ``firmware_sim.wire`` registers
#: ``"__wire_copies__"``).
_LAYERS = {}


@dataclass(frozen=True)
class Inference:
    """What :meth:`BaseDevice.infer` returns.

    Attributes
    ----------
    labels : ndarray of int64, shape (t,), or None
        Class indices (None for a device that computes no labels, e.g. an
        SSBC image without a code table: it computes codes).
    decision : dict of str -> ndarray
        The kind's decision integers, by name (the names of
        :meth:`BaseDevice.decision_layout`).
    """

    labels: object
    decision: dict = field(default_factory=dict)


class BaseDevice:
    """The device contract and the spec of a model kind (hooks with defaults).

    A kind **must** define ``kind`` and ``kind_code`` (class attributes; or
    pass them to :func:`register_kind`), ``__init__(container)`` (validate:
    call :meth:`check_container`, refuse with ``ContainerError``),
    :meth:`encode`, :meth:`infer`, :meth:`stage`, :meth:`finish`,
    :attr:`frame_width` and :meth:`resources`.

    Everything else has a default:

    ================================ ==============================================
    hook                             default
    ================================ ==============================================
    ``frame_dtype``                  ``uint8`` (0/1 bits); ``int16`` features
    ``stage_symbols``                2 (intermediate results are bits)
    ``default_site``                 ``"wire"``
    ``c_sources``, ``c_switch``      ``()``, ``None``: no C runtime
    ``c_defines()``                  ``{}``: no ``ec_config.h`` settings of its own
    ``c_inline(stamp)``              ``None``: no code-generated form (``--trees inline``)
    ``runtime_bytes``                ``{}``: no measured C runtime on any profile
    ``check_container(container)``   the container's kind is ``kind``
    ``decision_layout()``            ``()``: no decision integers in the C runner
    ``decision_rows(frames)``        from :meth:`infer` and :meth:`decision_layout`
    ``workspace_bytes()``            64
    ``labels(frames)``               ``infer(frames).labels``
    ``channel_eps(eps, site, w)``    one eps, or one per stream position
    ``stream_labeler(site)``         ``finish`` / ``labels`` of the wire's frames
    ``bit_fault_runner(...)``        ``None`` (the engine's plain path)
    ================================ ==============================================
    """

    #: Container kind this class reads (the registry key).
    kind: ClassVar[Optional[str]] = None
    #: uint16 code of the kind in the container header.
    kind_code: ClassVar[Optional[int]] = None
    #: dtype of a frame: uint8 0/1 bits, or int16 fixed-point features.
    frame_dtype: ClassVar[np.dtype] = np.dtype(np.uint8)
    #: Alphabet of the intermediate results (2 for bits; N for N-ary symbols).
    #: A class attribute or a property.
    stage_symbols: int = 2
    #: Where :func:`firmware_sim.simulate` and campaigns put bit faults unless
    #: told: the noise the kind is designed to tolerate.
    default_site: ClassVar[str] = "wire"
    #: The kind's C runtime files in ``firmware_sim/c/`` (beside the shared
    #: ``ec_container.c``, ``ec_model.c``, ``ec_quantize.c``).
    c_sources: ClassVar[tuple] = ()
    #: The kind's switch in ``ec_config.h`` (``EC_WITH_<KIND>``).
    c_switch: ClassVar[Optional[str]] = None
    #: ``(flash, ram)`` bytes the C runtime adds for this kind, by profile name
    #: (measured: ``edgecode firmware --build`` at -O2, one kind compiled in;
    #: :meth:`firmware_sim.profiles.DeviceProfile.runtime_bytes` asks here).
    runtime_bytes: ClassVar[Mapping[str, tuple]] = MappingProxyType({})

    # -- what a kind defines ----------------------------------------------------
    def encode(self, X) -> np.ndarray:
        """Host side: the frames of the points ``X`` (rows of ``frame_dtype``)."""
        raise NotImplementedError

    def infer(self, frames) -> Inference:
        """Device side: labels and decision integers of the frames."""
        raise NotImplementedError

    def stage(self, frames) -> np.ndarray:
        """The intermediate results of the frames (the ``"intermediate"`` site)."""
        raise NotImplementedError

    def finish(self, intermediate) -> np.ndarray:
        """Labels (int64) of intermediate results: ``infer(frames).labels ==
        finish(stage(frames))``."""
        raise NotImplementedError

    @property
    def frame_width(self) -> int:
        """Entries per frame (bits for uint8 frames, features for int16 frames)."""
        raise NotImplementedError

    def resources(self) -> dict:
        """Flash, RAM and operations of one inference (``flash_bytes``,
        ``ram_bytes``, ``ops_per_inference``, ``kind``...)."""
        raise NotImplementedError

    # -- the container ----------------------------------------------------------
    @classmethod
    def check_container(cls, container: Container) -> dict:
        """The kind's schema and consistency rules (``docs/container_format.md``):
        the validated arrays and scalars by name, or :class:`ContainerError`
        naming the array and the rule. The default checks the kind only."""
        if container.kind != cls.kind:
            raise ContainerError(f"container kind is {container.kind!r}; expected "
                                 f"{cls.kind!r}")
        return {}

    # -- image protection (issue 27) ---------------------------------------------
    @classmethod
    def erasure_owners(cls, container: Container) -> dict:
        """The kind's fallback for detected upsets (:mod:`firmware_sim.protection`):
        ``{array: owners}``, for each array whose elements may be erased, an int
        array with one entry per element: the unit that :meth:`erase` drops when
        the element is detected bad (an ECOC learner, a forest tree), or -1 when
        reading the element as 0 is the whole fallback. ``container`` holds the
        corrected arrays (a detected element as it was read). A detected upset
        in an array not listed refuses the image. The default lists none."""
        return {}

    @classmethod
    def repair(cls, arrays: dict, units) -> dict:
        """Before the rules run: the arrays (corrected; detected elements read 0)
        made consistent for the erased ``units`` (e.g. an erased ECOC tree
        rebuilt as a placeholder). The default returns them unchanged."""
        return arrays

    def erase(self, units) -> None:
        """Drop the units (sorted int64) that :meth:`erasure_owners` named after a
        detected upset; their elements already read 0."""
        raise ContainerError(f"{type(self).__name__} has no erasure fallback")

    # -- what the C runtime writes ----------------------------------------------
    def decision_layout(self) -> tuple:
        """Names and widths of the decision integers, in the C runner's order:
        ``((name, width), ...)``; each name is a key of ``infer(...).decision``
        whose rows have ``width`` entries."""
        return ()

    def decision_rows(self, frames) -> tuple:
        """``(labels, rows)``: int64 labels (-1 where the device computes none)
        and the int64 matrix of the decision integers in
        :meth:`decision_layout` order (what the C runner prints per frame)."""
        inf = self.infer(frames)
        t = np.asarray(frames).shape[0]
        labels = np.full(t, -1, np.int64) if inf.labels is None \
            else np.asarray(inf.labels, np.int64)
        parts = []
        for name, width in self.decision_layout():
            part = np.asarray(inf.decision[name], np.int64).reshape(t, -1)
            if part.shape[1] != width:
                raise DeviceError(f"{type(self).__name__}: decision {name!r} has "
                                  f"{part.shape[1]} entries per frame; decision_layout says "
                                  f"{width}")
            parts.append(part)
        rows = np.hstack(parts) if parts else np.empty((t, 0), np.int64)
        return labels, rows

    def c_defines(self) -> Mapping[str, int]:
        """``ec_config.h`` settings (macro -> integer) of a firmware written for
        this model alone, beside the kind's switch: ``edgecode firmware`` writes
        each as ``#define`` (unless the compiler's command line defines it),
        e.g. to compile in only the code paths this image needs. The default
        has none."""
        return {}

    def c_inline(self, stamp: bytes, form: str = "code") -> Optional[str]:
        """The C file of a firmware in which this model is code rather than an
        image (``edgecode firmware --trees inline``, ``form="code"``, or
        ``--trees arrays``, ``form="arrays"``: the model's arrays compiled in;
        :mod:`firmware_sim.c_inline`):
        the whole API of ``edgecode_rt.h`` for this model alone, whose
        ``ec_model_open`` accepts the 8-byte ``stamp`` only
        (:func:`firmware_sim.c_inline.stamp`), with the labels and decision
        integers of :meth:`decision_rows`. The default is None: the kind has
        no such form."""
        return None

    def cost_counts(self, frames=None):
        """What the C runtime does for this image, counted for the cost model
        (:func:`firmware_sim.profiles.estimate`, issue 26): ``{"open": {name:
        count}, "infer": {name: count}}``, each count one kind of work of the
        kind's C code (bits scanned, multiply-accumulates, nodes visited, bytes
        of the image CRC'd ...), which a profile prices in cycles (its
        ``prices[kind]``, fitted by ``benchmarks/calibrate_profiles.py``).
        With ``frames``, the inference counts are arrays, one per frame (the
        work that depends on the data, counted on it); without, one number
        each (the data-dependent ones at their worst case). None (the
        default): the kind has no cost model; the profile's operation classes
        price ``resources()`` instead. An optional ``"family"`` names the
        price table (default: the kind; ECOC has one per learner family)."""
        return None

    def workspace_bytes(self) -> int:
        """Upper bound of the C runtime's ``ec_workspace_bytes`` for this image
        (the firmware writer's ``EC_WORKSPACE_BYTES``; the runner refuses to run
        if the runtime asks for more)."""
        return 64

    # -- the engine's hooks ----------------------------------------------------------
    def labels(self, frames) -> np.ndarray:
        """Class indices of frames: ``infer(frames).labels`` (a kind may override
        it with a faster path that returns the same)."""
        return self.infer(frames).labels

    def channel_eps(self, eps, site: str, width: int):
        """The flip probabilities of :func:`firmware_sim.simulate`'s BSC at
        ``site`` (``width`` stream positions) from what the caller gave: one
        probability in [0, 1] (a float) or one per position (float64
        ``(width,)``), else a clear error (:func:`firmware_sim.channel.check_channel_eps`).
        A kind may accept other shapes."""
        return check_channel_eps(eps, width)

    def stream_labeler(self, site: str) -> Callable[[np.ndarray], np.ndarray]:
        """Labels of rows of the stream at ``site`` (the engine's plain path
        labels every noisy row with it): ``finish`` at the intermediate
        results; at the wire, ``labels`` of the frames the bits make."""
        if site == "intermediate":
            return self.finish
        if self.frame_dtype == np.uint8:
            return self.labels
        return lambda bits: self.labels(self.frames_from_wire(bits))

    def bit_fault_runner(self, site: str, fault, stream: np.ndarray, clean: np.ndarray,
                         y: Optional[np.ndarray], n_trials: int) -> Optional[BatchRunner]:
        """A fast path for a bit ``fault`` at ``site``, or ``None`` when there is
        none (the engine then builds every noisy row: the plain path).

        ``stream`` is the clean stream at the site (one row per point),
        ``clean`` the clean labels, ``y`` the true labels (int64) or None.
        A fast path returns a :data:`BatchRunner` that makes the same random
        draws as the plain path (``fault.error_masks`` for additive faults)
        and gives the same counts, trial for trial (tested).
        """
        return None

    # -- helpers every kind shares --------------------------------------------------
    def check_frames(self, frames) -> np.ndarray:
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
    def wire_width(self) -> int:
        """Bits per frame on the wire."""
        return self.frame_width * 8 * self.frame_dtype.itemsize if self.frame_dtype != np.uint8 \
            else self.frame_width

    def wire_bits(self, frames) -> np.ndarray:
        """Frames as the bits on the wire, uint8 0/1 of shape (t, wire_width):
        bit frames as they are; int16 frames 16 bits per value, least
        significant first (little-endian bytes)."""
        frames = self.check_frames(frames)
        if self.frame_dtype == np.uint8:
            return frames
        raw = frames.astype(self.frame_dtype.newbyteorder("<"), copy=False).view(np.uint8)
        return np.ascontiguousarray(np.unpackbits(raw, axis=1, bitorder="little"))

    def frames_from_wire(self, bits) -> np.ndarray:
        """Inverse of :meth:`wire_bits`."""
        if self.frame_dtype == np.uint8:
            return bits
        raw = np.packbits(np.asarray(bits, np.uint8), axis=1, bitorder="little")
        return np.ascontiguousarray(raw).view(self.frame_dtype.newbyteorder("<")) \
            .astype(self.frame_dtype, copy=False)


def register_kind(*args: Union[str, int, type]) -> type:
    """Register a model kind: ``register_kind(cls)`` (usable as a class decorator;
    ``cls.kind`` and ``cls.kind_code`` name it) or ``register_kind(name, code, cls)``
    (sets them). Containers of kind ``name`` (header code ``code``) are then
    read by ``cls``, a :class:`BaseDevice` subclass.

    Re-registering the same (name, code, class) is a no-op; anything else that
    clashes raises :class:`~firmware_sim.errors.DeviceError`.
    """
    if len(args) == 1:
        (cls,) = args
        name, code = getattr(cls, "kind", None), getattr(cls, "kind_code", None)
    elif len(args) == 3:
        name, code, cls = args
    else:
        raise TypeError("register_kind takes cls, or name, code and cls; got "
                        f"{len(args)} arguments")
    if not (isinstance(cls, type) and issubclass(cls, BaseDevice)):
        raise TypeError(f"cls must be a Device subclass; got {cls!r}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a kind name (class attribute kind); got "
                        f"{name!r}")
    if isinstance(code, bool) or not isinstance(code, (int, np.integer)):
        raise TypeError(f"{cls.__name__} needs an integer kind_code; got {code!r}")
    code = int(code)
    known = {k: c.kind_code for k, c in _DEVICES.items()}
    if known.get(name, code) != code or any(k != name and v == code for k, v in known.items()):
        raise DeviceError(f"kind {name!r} / code {code} clashes with the registered kinds "
                          f"{known}")
    if _DEVICES.get(name, cls) is not cls:
        raise DeviceError(f"kind {name!r} is already read by {_DEVICES[name].__name__}")
    register_kind_code(name, code)
    cls.kind = name
    cls.kind_code = code
    _DEVICES[name] = cls
    return cls


def register_layer(array_name: str, wrap: Callable) -> None:
    """Register a protection layer that wraps a device of any kind: an image
    holding the reserved array ``array_name`` (one of
    :data:`firmware_sim.artifact.LAYER_NAMES`) loads as
    ``wrap(device, container)``, where ``device`` is the kind's device of the
    same container. ``wrap`` validates the layer's arrays
    (:class:`~firmware_sim.errors.ContainerError`)."""
    if array_name not in LAYER_NAMES:
        raise DeviceError(f"layer array {array_name!r} is not a reserved layer name "
                          f"{LAYER_NAMES}")
    if _LAYERS.get(array_name, wrap) is not wrap:
        raise DeviceError(f"layer {array_name!r} is already registered")
    _LAYERS[array_name] = wrap


def device_kinds() -> dict:
    """Registered kind name -> device class (a copy)."""
    return dict(_DEVICES)


def load(source) -> BaseDevice:
    """Open any container and return the device for its kind.

    Parameters
    ----------
    source : str, os.PathLike, bytes or Container
        A container file, its bytes, or a parsed container (a device is
        returned as it is). Loading parses and validates only (no code is
        executed); a malformed or inconsistent image raises
        :class:`~firmware_sim.errors.ContainerError`.

    Returns
    -------
    BaseDevice

    Examples
    --------
    >>> from firmware_sim import ProtectedNBDevice
    >>> dev = load(ProtectedNBDevice.from_arrays([2], -1, [1]).container.tobytes())
    >>> type(dev).__name__, dev.infer(dev.encode([[0], [1]])).labels.tolist()
    ('ProtectedNBDevice', [0, 1])
    """
    if isinstance(source, BaseDevice):
        return source
    container = source if isinstance(source, Container) else read_container(source)
    cls = _DEVICES.get(container.kind)
    if cls is None:
        raise ContainerError(f"no device is registered for container kind {container.kind!r}; "
                             f"known: {sorted(_DEVICES)}")
    if container.protect is not None:
        from .protection import open_protected
        device = open_protected(container, cls)
    else:
        device = cls(container)
    for name, wrap in _LAYERS.items():
        if name in container.arrays:
            device = wrap(device, container)
    return device
