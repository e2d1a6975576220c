"""The device side's error hierarchy: one base class, one subclass per mistake.

Every error ``firmware_sim`` raises on purpose is a :class:`DeviceError`
(a ``ValueError``, so ``except ValueError`` keeps working) or a plain
``TypeError`` for an argument of the wrong type:

* :class:`ContainerError`: a container (file, bytes, schema or the
  consistency rules of ``docs/container_format.md``) is malformed; the
  message names the array or field and the rule.
* :class:`SizeLimitError`: a size argument (``n_trials``, a shape read
  from an image) whose memory would exceed the limit of
  ``firmware_sim._limits``; raised before anything is allocated.
* :class:`FrameError`: frames a device cannot read (wrong width or dtype;
  e.g. a device whose stored repetition counts were upset expects another
  frame length: campaigns count such a trial as *refused*).
* :class:`~firmware_sim.profiles.ProfileError` (and ``DoesNotFitError``): a
  device profile is malformed, or the model does not fit it.

Imports nothing.
"""

__all__ = ["DeviceError", "ContainerError", "FrameError", "SizeLimitError"]


class DeviceError(ValueError):
    """Base class of the errors the device side raises on purpose."""


class ContainerError(DeviceError):
    """A container (file, bytes or schema) is malformed; the message says where."""


class FrameError(DeviceError):
    """Frames a device cannot read (shape, dtype or values)."""


class SizeLimitError(DeviceError):
    """A size argument whose memory would exceed ``firmware_sim._limits.MAX_ALLOCATION_BYTES``."""
