"""Writes the ONNX backend node tests of the installed `onnx` package to a folder.

Recent `onnx` wheels ship the node test cases as Python (onnx/backend/test/case/node) rather
than as files; this renders them in the usual layout:
    OUT/<test_name>/model.onnx
    OUT/<test_name>/test_data_set_<i>/{input,output}_<j>.pb
The reference outputs come from the cases themselves (onnx's reference implementation).
Usage: gen_node_tests.py OUT
"""

import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def write_value(path, value, value_info):
    t = value_info.type
    if t.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, value_info.name)
    elif t.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, value_info.name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(np.asarray(value), value_info.name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    out = sys.argv[1]
    np.random.seed(0)
    cases = node_cases.collect_testcases()
    os.makedirs(out, exist_ok=True)
    written = 0
    for case in cases:
        d = os.path.join(out, case.name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for j, v in enumerate(inputs):
                write_value(os.path.join(ds, f"input_{j}.pb"), v, graph.input[j])
            for j, v in enumerate(outputs):
                write_value(os.path.join(ds, f"output_{j}.pb"), v, graph.output[j])
        written += 1
    print(f"gen_node_tests: {written} node tests in {out}")


if __name__ == "__main__":
    main()
