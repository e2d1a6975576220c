"""What the bridge knows per model kind: one :class:`KindSpec` per kind, registered once.

The device side registers kinds in :mod:`firmware_sim.device` (container kind
-> ``Device`` subclass); the bridge registers, per kind, a :class:`KindSpec`
subclass instance (``export/kinds/<kind>.py``) that answers everything the
shared bridge modules ask of a kind:

* **data rows** for the command line (:meth:`KindSpec.rows`: what ``edgecode
  simulate``, ``campaign``, ``upsets`` and ``firmware --check`` feed the
  device);
* for ``edgecode budget`` (:mod:`export.budget`): its search-space fields
  (:attr:`KindSpec.space_options`, which also become ``edgecode budget``
  options), its configurations, screening bounds before training, fitting,
  the label of a configuration, its plot marker and its own fault site;
* its **closed-form analytics** next to a campaign (:meth:`KindSpec.analytic`);
* an **example fit** on small data (:meth:`KindSpec.example_fit`) that the
  kind-matrix tests run every command on.

Every hook has a default here, so a kind implements only what it supports:
a kind with only :attr:`KindSpec.kind` gets the command line's ``simulate``,
``campaign`` and ``upsets`` on numeric rows (:func:`export.data.table_rows`);
``budget`` searches it once it yields configurations. New hooks (protection
per kind, growth steps of the explorer) are added the same way: a method
with a default here, overridden where a kind supports it.

``export/kinds/__init__.py`` imports the built-in kinds, and ``import export``
imports it, so the registry is full whenever any ``export`` module is
loaded. This module imports nothing from ``export``.

Examples
--------
>>> import export
>>> {"protected_nb", "ecoc", "ssbc"} <= {s.kind for s in kind_specs()}
True
>>> kind_spec("protected_nb").name, kind_spec("ecoc").marker
('nb', 'o')
"""

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Optional, Sequence

__all__ = ["KindSpec", "SpaceOption", "register_kind_spec", "kind_spec", "kind_specs",
           "find_kind_spec", "register_rows", "kind_rows"]

_SPECS = {}


@dataclass(frozen=True)
class SpaceOption:
    """One field of the budget search space that a kind owns.

    Attributes
    ----------
    name : str
        The :class:`export.budget.SearchSpace` field (``"nb_rates"``).
    default : object
        Its default value.
    check : callable, optional
        ``check(value) -> value``: validates (``ValueError``/``TypeError``
        naming ``space.<name>``) and normalises (tuples of ints, ...).
    cli : str, optional
        The ``edgecode budget`` option that sets it as a comma list
        (``"--nb-rates"``); None: Python only.
    item : callable
        Converts each comma item of the option (``int``, ``str``).
    help : str
        The option's help text.
    """

    name: str
    default: Any
    check: Optional[Callable[[Any], Any]] = None
    cli: Optional[str] = None
    item: Callable[[str], Any] = str
    help: str = ""

    def cli_default(self):
        """The default as the comma list the command line shows."""
        v = self.default
        return ",".join(str(x) for x in v) if isinstance(v, (tuple, list)) else str(v)


class KindSpec:
    """The bridge side of one model kind (subclass it in ``export/kinds/<kind>.py``).

    Class attributes
    ----------------
    kind : str
        The container kind (``firmware_sim`` device kind) it describes.
    name : str
        Its short name on the command line (``edgecode budget --kinds``);
        defaults to ``kind``.
    marker : str
        Matplotlib marker of its points in budget plots.
    site_text : str
        Its own fault site in words (``"NB wire bits"``), for reports.
    compute_text : str
        What the ``compute`` site of a budget search corrupts for this kind
        (its intermediate results, ``"ECOC learner outputs"``), for reports.
    space_options : tuple of SpaceOption
        Its fields of the budget search space.
    example_space : mapping or None
        A small search space (``space_options`` values) that ``budget``
        searches in seconds (the kind-matrix tests); None: not searched.
    analytic_note : str or None
        One line on its closed form, attached to campaign results.
    exact_closed_form : bool
        False: :meth:`analytic` never gives an accuracy for bit faults (only
        bounds), so ``budget`` simulates without asking it.
    example_variants : tuple of str
        The models :meth:`example_fit` makes (e.g. tree and linear learners).
    """

    kind: ClassVar[str] = None
    name: ClassVar[str] = None
    marker: ClassVar[str] = "D"
    site_text: ClassVar[str] = ""
    compute_text: ClassVar[str] = ""
    space_options: ClassVar[Sequence[SpaceOption]] = ()
    example_space: ClassVar[Optional[Mapping[str, Any]]] = None
    analytic_note: ClassVar[Optional[str]] = None
    exact_closed_form: ClassVar[bool] = True
    example_variants: ClassVar[Sequence[str]] = ("default",)

    @property
    def cli_name(self) -> str:
        """The name ``edgecode budget --kinds`` takes."""
        return self.name or self.kind

    # ------------------------------------------------------------ data rows
    def rows(self, container, dataset, split, **options):
        """``(X, y, name)``: the rows ``device.encode`` takes, true labels as the
        artifact's class indices (None when unknown), and the data's name.

        ``dataset`` is a bundled name, a CSV path (read with the options the
        artifact records, updated by ``options``) or an ``(X, y)`` pair.
        Default: numeric rows (:func:`export.data.table_rows`).
        """
        from export.data import table_rows
        return table_rows(container, dataset, split, **options)

    # ------------------------------------------------------------- protection
    def wire_sensitivity(self, device, X):
        """Per point and wire position (feature, bit): whether one wrong bit alone
        changes the device's label, bool ``(t, n_features, 16)`` (issue 27).
        Default: exact, through the device's integer inference on every
        single-flip frame (:func:`export.protect_wire.single_flip_changes`);
        a kind may override it with a closed form giving the same."""
        from export.protect_wire import single_flip_changes
        return single_flip_changes(device, X)

    def wire_bound(self, device, X, copies, eps):
        """A certified ``(lower, upper)`` of the mean label-change probability when
        bit b of feature f is decoded wrong independently with probability
        ``p(copies[f, b])``, or None (default: no closed form; the planner then
        uses its first-order bound, else simulates)."""
        return None

    # ------------------------------------------------------------- budget
    def unsupported(self, task) -> Optional[str]:
        """Why this kind cannot be trained on ``task``'s data (None: it can)."""
        return None

    def configurations(self, space, *, n_classes: int, n_features: int,
                       binary: bool) -> list:
        """The kind's configurations in ``space`` (dicts with ``"kind": self.kind``),
        in search order. Default: none (the kind is not searched)."""
        return []

    def label(self, config: Mapping) -> str:
        """A short readable name of one of its configurations."""
        rest = " ".join(f"{k}={v}" for k, v in config.items() if k != "kind")
        return f"{self.cli_name} {rest}".strip()

    def screen(self, config: Mapping, task, random_state) -> dict:
        """Lower bounds of the image flash and model RAM before training:
        ``{"flash_bytes", "ram_bytes", "exact"}`` plus anything :meth:`fit`
        reuses. Raises ``ValueError`` when the configuration cannot be built."""
        raise NotImplementedError(f"kind {self.kind!r} has no budget screening")

    def fit(self, config: Mapping, task, *, plan_eps: float, random_state,
            screened: Optional[Mapping] = None):
        """Train ``config`` on ``task``'s training rows and export it:
        an :class:`export._budget_space.Fitted` (``screened``: what
        :meth:`screen` returned)."""
        raise NotImplementedError(f"kind {self.kind!r} has no budget fitting")

    # ------------------------------------------------ budget: the growing search
    def seeds(self, space, *, n_classes: int, n_features: int, binary: bool) -> list:
        """The cheap corner the growing search starts from (configurations, cheapest
        first). Default: every configuration of :meth:`configurations` (a kind
        without :meth:`grow` is searched on its grid)."""
        return self.configurations(space, n_classes=n_classes, n_features=n_features,
                                   binary=binary)

    def grow(self, config: Mapping, space, *, n_classes: int, n_features: int,
             binary: bool) -> list:
        """The configurations one growth step larger than ``config`` (more depth,
        learners, trees, code length, alphabet, bits, repetitions: one step in
        each direction the kind has). Default: none."""
        return []

    def family(self, config: Mapping) -> str:
        """The lineage a configuration grows in: the growing search keeps one front
        per family (and stops each on its own), so that a family behind at small
        sizes still climbs. Default: the kind."""
        return self.kind

    def baselines(self, space, *, n_classes: int, n_features: int, binary: bool) -> list:
        """The obvious choices a user would try first, as ``(name, ladder)`` pairs:
        ``ladder`` a list of configurations by growing size; the search reports,
        per name, the best one at no more flash than its recommendation.
        Default: none."""
        return []

    #: Sites where the budget search offers this kind planned protection (issue 27):
    #: ``"wire"`` (its int16 features repeated per (feature, bit),
    #: :mod:`export.protect_wire`) and/or ``"image"`` (its stored arrays,
    #: :mod:`export.protect_image`). Default: none.
    protection_sites: ClassVar[Sequence[str]] = ()

    def protected_variants(self, config: Mapping, space, *, site=None, levels=()) -> list:
        """The configurations ``config`` becomes with each protection the kind
        offers at the search's ``site`` (issue 27: protection as part of each
        configuration): ``config`` itself (unprotected), then one copy per
        protection level of ``levels`` (extra copies per frame bit at the wire,
        flash overheads of the image) with ``"protection": {"layer", "level"}``,
        when ``site`` is one of :attr:`protection_sites`. The search fits the
        model once and plans each protection on the fitted device."""
        base = {k: v for k, v in config.items() if k != "protection"}
        if site not in self.protection_sites:
            return [base]
        return [base] + [{**base, "protection": {"layer": site, "level": lvl}} for lvl in levels]

    # ---------------------------------------------------------- analytics
    def analytic(self, device, X, fault, y=None, site=None) -> dict:
        """The closed-form outcome of a campaign with ``fault`` at ``site``
        (``{"available": True, "same_rate", "accuracy", "method", ...}`` or
        ``{"available": False, "reason"}``). Parameter upsets are handled by
        :mod:`export.analytics` for every kind before this is asked."""
        return {"available": False,
                "reason": f"no closed form for {self.kind} devices (simulated only)"}

    def describe_method(self, method: str) -> str:
        """The budget report's words for a closed form's ``method``."""
        return method

    def same_rate_prediction(self, device, X, eps) -> Optional[tuple]:
        """The closed-form same-classification rate under a BSC of flip probability
        ``eps`` at the kind's default site, over the points ``X`` (what ``edgecode
        simulate`` prints next to its measurement): ``(mean, lower, upper,
        method)``, ``lower == upper == mean`` when exact; None: no closed form."""
        return None

    # -------------------------------------------------------------- tests
    def example_fit(self, X, y, *, meta: Mapping, variant: str = "default"):
        """A small model of this kind (one of :attr:`example_variants`) fitted on
        ``X`` and the true labels ``y``, exported with ``meta`` (the dataset
        it records; the export adds ``classes``): an
        :class:`export.result.ExportResult` (``onnx_model`` may be None).
        The kind-matrix tests (``tests/kind_matrix.py``) run every command on it."""
        raise NotImplementedError(f"kind {self.kind!r} has no example fit")

    def accepts(self, n_classes: int, binary: bool) -> bool:
        """Whether :meth:`example_fit` takes data of this shape (``binary``: 0/1
        features and two classes)."""
        return True

    def __repr__(self):
        return f"<{type(self).__name__} kind={self.kind!r}>"


def register_kind_spec(spec):
    """Register the bridge spec of a model kind (an instance, or a class to instantiate).

    Re-registering a spec of the same class is a no-op; another spec for a
    registered kind, or a clashing short name, raises ``ValueError``.
    """
    if isinstance(spec, type):
        spec = spec()
    if not isinstance(spec, KindSpec):
        raise TypeError(f"spec must be a KindSpec; got {spec!r}")
    if not isinstance(spec.kind, str) or not spec.kind:
        raise ValueError(f"{type(spec).__name__}.kind must name the container kind; got "
                         f"{spec.kind!r}")
    old = _SPECS.get(spec.kind)
    if old is not None:
        if type(old) is type(spec):
            return old
        raise ValueError(f"kind {spec.kind!r} already has the bridge spec "
                         f"{type(old).__name__}")
    for other in _SPECS.values():
        if spec.cli_name in (other.kind, other.cli_name):
            raise ValueError(f"short name {spec.cli_name!r} of kind {spec.kind!r} clashes "
                             f"with kind {other.kind!r}")
    _SPECS[spec.kind] = spec
    return spec


def kind_specs():
    """The registered specs, in registration order (the built-ins first)."""
    return tuple(_SPECS.values())


def find_kind_spec(name):
    """The spec whose kind or short name is ``name`` (None if there is none)."""
    if name in _SPECS:
        return _SPECS[name]
    return next((s for s in _SPECS.values() if s.cli_name == name), None)


def kind_spec(kind):
    """The spec of ``kind`` (its container kind or short name); ``ValueError``
    naming the registered kinds if there is none."""
    spec = find_kind_spec(kind)
    if spec is None:
        raise ValueError(f"the bridge knows no kind {kind!r} (registered: "
                         f"{sorted(_SPECS)}); register one with "
                         "export.registry.register_kind_spec")
    return spec


def register_rows(kind, rows):
    """Register only the data rows of ``kind``: the shortcut for a kind whose sole
    bridge need is the command line's ``simulate``/``campaign``/``upsets``
    (``rows(container, dataset, split, **options) -> (X, y, name)``)."""
    if not callable(rows):
        raise TypeError(f"rows must be callable; got {rows!r}")

    class _Rows(KindSpec):
        def rows(self, container, dataset, split, **options):
            return rows(container, dataset, split, **options)

    _Rows.kind = kind
    _Rows.__name__ = f"RowsOf_{kind}"
    if kind in _SPECS:
        raise ValueError(f"kind {kind!r} already has the bridge spec "
                         f"{type(_SPECS[kind]).__name__}; override its rows method")
    return register_kind_spec(_Rows()).rows


def kind_rows(kind):
    """The rows function of ``kind`` (:meth:`KindSpec.rows`); ``ValueError`` naming
    the known kinds if the bridge has no spec for it."""
    spec = find_kind_spec(kind)
    if spec is None:
        raise ValueError(f"the command line has no data rows for {kind!r} artifacts "
                         f"(known: {sorted(_SPECS)}); register a bridge spec with "
                         "export.registry.register_kind_spec")
    return spec.rows
