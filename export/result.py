"""One export result type for every model kind.

Every ``export_*`` function (``export_protected_nb``, ``export_ecoc``,
``export_ssbc``) returns an :class:`ExportResult` with the same fields: the
container bytes, the ONNX model, the device loaded back from the container
(through :func:`firmware_sim.load`), its resources, and what was verified.
Kind-specific figures are in ``details`` (also readable as attributes:
``result.scale_shift``, ``result.classes``, ``result.bit_agreement``).
"""

from dataclasses import dataclass, field

__all__ = ["ExportResult"]


@dataclass
class ExportResult:
    """What an export wrote and measured.

    Attributes
    ----------
    kind : str
        The container kind (``"protected_nb"``, ``"ecoc"``, ``"ssbc"``).
    container : bytes
        The flat-array container (also written to ``container_path``).
    onnx_model : onnx.ModelProto
    device : firmware_sim.device.Device
        The device runtime loaded from ``container``.
    resources : dict
        ``device.resources()``: flash, RAM and operations of one inference.
    checked_inputs : int
        Inputs on which the device was compared with the float model.
    label_mismatches : int or None
        Of those, inputs where the device's label differs from the float
        model's (None where labels were not compared: SSBC compares bits).
    details : dict
        Kind-specific: ``scale_shift`` (naive Bayes), ``classes`` and
        ``bit_agreement`` (SSBC).
    """

    kind: str
    container: bytes
    onnx_model: object
    device: object
    resources: dict
    checked_inputs: int = 0
    label_mismatches: object = None
    details: dict = field(default_factory=dict)

    def __getattr__(self, name):
        details = self.__dict__.get("details") or {}
        if name in details:
            return details[name]
        raise AttributeError(f"{type(self).__name__} of kind {self.__dict__.get('kind')!r} "
                             f"has no attribute {name!r}")

    @property
    def flash_bytes(self):
        return int(self.resources["flash_bytes"])

    @property
    def ram_bytes(self):
        return int(self.resources["ram_bytes"])

    @property
    def ops_per_inference(self):
        return dict(self.resources["ops_per_inference"])

    def fit_warning(self, profile=None):
        """A one-line warning when the model fits no device: ``profile`` (a name, a
        path or a DeviceProfile) or, without one, none of the built-in profiles;
        None when it fits. Every command that writes an artifact prints it.

        >>> from edgecode.datasets import load_house_votes
        >>> from edgecode.naive_bayes import BinaryNaiveBayes
        >>> from export.naive_bayes import export_protected_nb
        >>> d = load_house_votes()
        >>> ex = export_protected_nb(BinaryNaiveBayes().fit(d.X, d.y), [0] * 16)
        >>> ex.fit_warning() is None
        True
        """
        from firmware_sim.profiles import BUILTIN_PROFILES, DoesNotFitError, check_fits, \
            get_profile

        res = {**self.resources, "kind": self.kind}
        profiles = [get_profile(profile)] if profile is not None else \
            list(BUILTIN_PROFILES.values())
        reasons = []
        for p in profiles:
            try:
                check_fits(p, res)
                return None
            except DoesNotFitError as exc:
                reasons.append(str(exc).split(": ", 1)[-1])
        which = f"profile {profiles[0].name!r}" if profile is not None else \
            "any built-in device profile (" + ", ".join(
                f"{p.name}: {p.flash_bytes // 1024} KB flash, {p.ram_bytes // 1024} KB RAM"
                for p in profiles) + ")"
        return (f"warning: this {self.kind} model ({self.flash_bytes:,} B image, "
                f"{self.ram_bytes:,} B RAM per inference) does not fit {which}: "
                f"{reasons[-1]}")

    def report(self):
        """One-line size and verification report."""
        ops = ", ".join(f"{k} {v}" for k, v in self.ops_per_inference.items())
        text = (f"flash {self.flash_bytes} B (container), RAM {self.ram_bytes} B per inference, "
                f"ops per inference: {ops}")
        if self.label_mismatches is not None and self.checked_inputs:
            text += (f"; device labels == float labels on "
                     f"{self.checked_inputs - self.label_mismatches}/{self.checked_inputs} "
                     "inputs")
        if "scale_shift" in self.details:
            text += f" (scale 2**{self.details['scale_shift']})"
        if self.details.get("bit_agreement") is not None:
            text += (f"; device bits == float bits on "
                     f"{100 * self.details['bit_agreement']:.3f}% of check bits")
        return text
