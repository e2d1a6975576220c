"""The bridge spec of streaming spectral binary codes (seed 002): kind ``"ssbc"``.

A Frequent Directions sketch of Gaussian affinities to m anchors gives k
projection vectors; the device codes a point by sign and votes among its
Hamming-nearest rows of a labelled code table (:mod:`export.ssbc` exports a
fitted :class:`edgecode.hashing.SSBC`, :class:`firmware_sim.SSBCDevice` runs it).

* **data rows**: numeric features (:func:`export.data.table_rows`);
* **budget** configurations ``{"kind": "ssbc", "n_bits": k, "n_anchors": m,
  "sketch_size": ell, "table_rows": T, "knn_k": K}``: SSBC codes (a sketch of
  ``ell = max(k + 1, min(2 k, m))`` rows) with a labelled k-NN table of
  ``T`` training rows (stratified). Screening is exact up to the metadata;
* **closed form**: none (k-NN votes over a code table; simulated only).

Examples
--------
>>> from export.registry import kind_spec
>>> kind_spec("ssbc").label({"kind": "ssbc", "n_bits": 32, "n_anchors": 128,
...                          "table_rows": 512, "knn_k": 5})
'ssbc 32 bits m=128 T=512 k=5'
"""

import numpy as np

from export._budget_space import Fitted, int_at_least, ints_at_least
from export.registry import KindSpec, SpaceOption, register_kind_spec

__all__ = ["SSBCSpec"]


class SSBCSpec(KindSpec):
    """SSBC k-NN codes on the bridge (see the module docstring)."""

    kind = "ssbc"
    protection_sites = ("wire", "image")
    marker = "^"
    site_text = "SSBC code bits"
    compute_text = "SSBC code bits"
    space_options = (
        SpaceOption("ssbc_bits", (16, 32, 64), ints_at_least("ssbc_bits", 1), cli="--ssbc-bits",
                    item=int, help="SSBC code lengths (comma list)"),
        SpaceOption("ssbc_anchors", 128, int_at_least("ssbc_anchors", 1)),
        SpaceOption("ssbc_table_rows", 512, int_at_least("ssbc_table_rows", 1)),
        SpaceOption("knn_k", 5, int_at_least("knn_k", 1)),
    )
    example_space = {"ssbc_bits": (16,), "ssbc_anchors": 64, "ssbc_table_rows": 200}
    analytic_note = "SSBC k-NN: no closed form (simulated only)"

    def configurations(self, space, *, n_classes, n_features, binary):
        m = int(space.ssbc_anchors)
        return [{"kind": self.kind, "n_bits": int(k), "n_anchors": m,
                 "sketch_size": max(int(k) + 1, min(2 * int(k), m)),
                 "table_rows": int(space.ssbc_table_rows), "knn_k": int(space.knn_k)}
                for k in space.ssbc_bits]

    def seeds(self, space, *, n_classes, n_features, binary):
        """The shortest code."""
        return self.configurations(space, n_classes=n_classes, n_features=n_features,
                                   binary=binary)[:1]

    def grow(self, config, space, *, n_classes, n_features, binary):
        """One step each: twice the code bits (at most the anchors), twice the
        table rows."""
        out = []
        k, m = int(config["n_bits"]), int(config["n_anchors"])
        if 2 * k <= m:
            out.append({**config, "n_bits": 2 * k, "sketch_size": max(2 * k + 1,
                                                                       min(4 * k, m))})
        if int(config["table_rows"]) < 8192:
            out.append({**config, "table_rows": 2 * int(config["table_rows"])})
        return out

    def label(self, config):
        return (f"ssbc {config['n_bits']} bits m={config['n_anchors']} "
                f"T={config['table_rows']} k={config['knn_k']}")

    def screen(self, config, task, random_state):
        from firmware_sim import load, make_ssbc_arrays, write_container

        d = task.n_features
        m, k, T = config["n_anchors"], config["n_bits"], _table_rows(config, task)
        if k > min(m, len(task.X_train)):
            raise ValueError(f"n_bits={k} must be <= n_anchors={min(m, len(task.X_train))} (the "
                             "code is the sign of m affinities times k projection vectors)")
        arrays = make_ssbc_arrays(np.ones((m, d)), 1.0, np.ones((m, k)), np.zeros(k),
                                  table_bits=np.zeros((T, k), np.uint8),
                                  table_labels=np.arange(T) % task.n_classes,
                                  n_classes=task.n_classes, knn_k=config["knn_k"])
        res = load(write_container(None, self.kind, arrays)).resources()
        return {"flash_bytes": int(res["flash_bytes"]), "ram_bytes": int(res["ram_bytes"]),
                "exact": True}

    def fit(self, config, task, *, plan_eps, random_state, screened=None):
        from sklearn.model_selection import train_test_split

        from edgecode.hashing import SSBC
        from export.ssbc import export_ssbc

        m = int(min(config["n_anchors"], len(task.X_train)))
        if config["n_bits"] > m:
            raise ValueError(f"n_bits={config['n_bits']} must be <= n_anchors={m} (the code is "
                             "the sign of m affinities times k projection vectors)")
        ell = int(config.get("sketch_size", max(config["n_bits"] + 1,
                                                min(2 * config["n_bits"], m))))
        h = SSBC(int(config["n_bits"]), m, ell, random_state=random_state).fit(task.X_train)
        T = _table_rows(config, task)
        if T < len(task.X_train):
            counts = np.bincount(task.y_train)
            strat = task.y_train if counts.min() >= 2 and T >= task.n_classes else None
            Xt, _, yt, _ = train_test_split(task.X_train, task.y_train, train_size=T,
                                            random_state=random_state, stratify=strat)
        else:
            Xt, yt = task.X_train, task.y_train
        ex = export_ssbc(h, X_table=Xt, y_table=task.labels(yt), knn_k=int(config["knn_k"]),
                         meta=task.meta)
        # the table's classes (true labels) as indices of the task's classes; a class
        # missing from the table gets an index the device never outputs
        table_idx = np.searchsorted(task.classes, np.asarray(ex.details["classes"]))
        Xd = task.X_test
        where = {int(v): i for i, v in enumerate(table_idx.tolist())}
        y_dev = np.array([where.get(int(v), len(table_idx)) for v in task.y_test], np.int64)
        labels = np.asarray(ex.device.infer(ex.device.encode(Xd)).labels, np.int64)
        acc = float(np.mean(labels == y_dev))
        return Fitted(ex, Xd, y_dev, acc, {"table_classes": table_idx.tolist()})

    def analytic(self, device, X, fault, y=None, site=None):
        site = device.default_site if site is None else site
        noise = "code-bit" if site == "intermediate" else f"{site}"
        return {"available": False,
                "reason": f"no closed form for SSBC k-NN under {noise} noise (simulated only)"}

    def example_fit(self, X, y, *, meta, variant="default"):
        from edgecode.hashing import SSBC
        from export.ssbc import export_ssbc

        h = SSBC(16, 64, 32, center=True, random_state=0).fit(X)
        return export_ssbc(h, X_table=X, y_table=y, meta=dict(meta))


def _table_rows(config, task):
    return int(min(config["table_rows"], len(task.X_train)))


register_kind_spec(SSBCSpec)
