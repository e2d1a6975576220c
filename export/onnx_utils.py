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
