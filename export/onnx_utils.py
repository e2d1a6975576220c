"""Small helpers shared by every ONNX exporter: pinned opset, checking, saving."""

import onnx
from onnx import helper

#: Opset of the default ONNX domain every edgecode graph declares.
OPSET = 17
#: IR version matching OPSET (onnx 1.12+), so older runtimes can load the graphs.
IR_VERSION = 8


def finish_model(graph, *, doc, props=None):
    """Wrap ``graph`` in a model with the pinned opset, check it fully, return it."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="edgecode", doc_string=doc)
    model.ir_version = IR_VERSION
    if props:
        helper.set_model_props(model, {str(k): str(v) for k, v in props.items()})
    onnx.checker.check_model(model, full_check=True)
    return model


def save_model(model, path):
    """Write ``model`` to ``path`` (bytes of its protobuf)."""
    with open(path, "wb") as fh:
        fh.write(model.SerializeToString())


#: Version of the interface conventions of the graphs built with :func:`json_props`
#: (metadata values are JSON text; ``classes`` is a JSON list).
ONNX_FORMAT_VERSION = 2

_NARROW_INTS = (("uint8", 0, 2**8 - 1), ("int8", -2**7, 2**7 - 1),
                ("uint16", 0, 2**16 - 1), ("int16", -2**15, 2**15 - 1),
                ("uint32", 0, 2**32 - 1), ("int32", -2**31, 2**31 - 1))

#: onnx element type of every numpy integer dtype :func:`narrow_int_dtype` returns.
_ONNX_INT = {"uint8": onnx.TensorProto.UINT8, "int8": onnx.TensorProto.INT8,
             "uint16": onnx.TensorProto.UINT16, "int16": onnx.TensorProto.INT16,
             "uint32": onnx.TensorProto.UINT32, "int32": onnx.TensorProto.INT32,
             "int64": onnx.TensorProto.INT64}


#: ONNX element types of the float feature inputs (``X``) the graphs take.
FLOAT_INPUTS = {"float32": onnx.TensorProto.FLOAT, "float64": onnx.TensorProto.DOUBLE}


def input_elem_type(input_dtype, allowed=FLOAT_INPUTS, *, what="input_dtype"):
    """``(dtype name, ONNX element type)`` of a graph input's element type, one
    of ``allowed`` (names or numpy dtypes); a ValueError names the choices.

    >>> input_elem_type("float64") == ("float64", onnx.TensorProto.DOUBLE)
    True
    """
    import numpy as np

    try:
        name = None if input_dtype is None else np.dtype(input_dtype).name
    except TypeError:
        name = None
    if name not in allowed:
        names = [f"'{k}'" for k in allowed]
        choice = " or ".join(names) if len(names) == 2 else "one of " + ", ".join(names)
        raise ValueError(f"{what} must be {choice}; got {input_dtype!r}")
    return name, allowed[name]


def narrow_int_dtype(values):
    """Narrowest integer dtype holding every value of ``values`` (an integer array).

    Tries uint8, int8, uint16, int16, uint32, int32, then int64.

    Examples
    --------
    >>> import numpy as np
    >>> [narrow_int_dtype(np.array(v)).name for v in ([0, 255], [-1, 5], [0, 32768], [-40000])]
    ['uint8', 'int8', 'uint16', 'int32']
    """
    import numpy as np

    a = np.asarray(values)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.integer) or a.dtype == bool):
        raise TypeError(f"values must be an integer array; got dtype {a.dtype}")
    if a.size == 0:
        return np.dtype(np.uint8)
    lo, hi = int(a.min()), int(a.max())
    for name, a_lo, a_hi in _NARROW_INTS:
        if a_lo <= lo and hi <= a_hi:
            return np.dtype(name)
    return np.dtype(np.int64)


def narrow_int_initializer(name, values, *, to=onnx.TensorProto.INT64):
    """An integer table stored in its narrowest dtype plus the Cast that widens it.

    Returns ``(initializer, nodes)``: the initializer is named ``name + "_stored"``
    (or ``name`` when no cast is needed) and ``nodes`` is ``[Cast -> name]`` (or
    ``[]``), so the graph reads ``name`` with element type ``to`` at run time
    while the file holds the narrow copy only.

    Examples
    --------
    >>> import numpy as np
    >>> init, nodes = narrow_int_initializer("lut", np.array([0, 32768]))
    >>> init.name, init.data_type == onnx.TensorProto.UINT16, nodes[0].op_type
    ('lut_stored', True, 'Cast')
    """
    import numpy as np
    from onnx import numpy_helper

    a = np.asarray(values)
    dt = narrow_int_dtype(a)
    if _ONNX_INT[dt.name] == to:
        return numpy_helper.from_array(a.astype(dt), name), []
    stored = name + "_stored"
    return (numpy_helper.from_array(np.ascontiguousarray(a.astype(dt)), stored),
            [helper.make_node("Cast", [stored], [name], to=to)])


def json_props(props):
    """Metadata values as JSON text (``json.loads`` reads every value back).

    Examples
    --------
    >>> json_props({"classes": ["setosa, Iris", 2], "n_bits": 32})
    {'classes': '["setosa, Iris", 2]', 'n_bits': '32'}
    """
    import json

    return {str(k): json.dumps(v, default=str) for k, v in props.items()}


def class_labels_initializer(name, classes):
    """A 1-D initializer holding ``classes`` for a ``Gather`` from class index to label.

    Integer and bool classes become int64, floating classes double, anything
    else strings (``str`` of each).  Returns ``(initializer, elem_type, labels)``
    where ``labels`` is the list written to metadata (``json_props``).

    Examples
    --------
    >>> init, t, labels = class_labels_initializer("classes", ["no, never", "yes"])
    >>> t == onnx.TensorProto.STRING, labels
    (True, ['no, never', 'yes'])
    >>> class_labels_initializer("classes", [3, 7])[2]
    [3, 7]
    """
    import numpy as np
    from onnx import numpy_helper

    c = np.asarray(classes)
    if c.ndim != 1 or c.size < 1:
        raise ValueError(f"classes must be a non-empty 1-D sequence; got shape {c.shape}")
    if c.dtype == bool or np.issubdtype(c.dtype, np.integer):
        arr, t = c.astype(np.int64), onnx.TensorProto.INT64
    elif np.issubdtype(c.dtype, np.floating):
        if not np.all(np.isfinite(c)):
            raise ValueError(f"classes must be finite; got {c.tolist()!r}")
        arr, t = c.astype(np.float64), onnx.TensorProto.DOUBLE
    else:
        arr, t = np.array([str(v) for v in c.tolist()], dtype=object), onnx.TensorProto.STRING
    return numpy_helper.from_array(arr, name), t, arr.tolist()
