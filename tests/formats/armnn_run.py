#!/usr/bin/python3
"""Runs a .tflite in Arm NN (Debian's python3-pyarmnn, the CpuRef backend).

Usage: /usr/bin/python3 armnn_run.py MODEL.tflite OUT_DIR IN0.npy [IN1.npy ...]

The inputs are given in the order of the model's subgraph inputs; the
outputs are written as OUT_DIR/out<k>.npy in the order of its outputs. Run
in its own process by the tests, so that a crash in Arm NN is a failed run,
not a failed test runner. Exit 0 when it ran; 3 when Arm NN refused the model
(the message on stderr); pyarmnn missing fails (exit 2).
"""

import os
import sys

import numpy as np

try:
    import pyarmnn as ann
except ImportError as e:
    print("armnn_run: python3-pyarmnn is not installed: %s" % e, file=sys.stderr)
    sys.exit(2)


def main():
    path, out_dir, ins = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        parser = ann.ITfLiteParser()
        net = parser.CreateNetworkFromBinaryFile(path)
        in_names = parser.GetSubgraphInputTensorNames(0)
        out_names = parser.GetSubgraphOutputTensorNames(0)
        ib = [parser.GetNetworkInputBindingInfo(0, n) for n in in_names]
        ob = [parser.GetNetworkOutputBindingInfo(0, n) for n in out_names]
        rt = ann.IRuntime(ann.CreationOptions())
        opt, _ = ann.Optimize(net, [ann.BackendId("CpuRef")], rt.GetDeviceSpec(),
                              ann.OptimizerOptions())
        nid, _ = rt.LoadNetwork(opt)
    except Exception as e:  # Arm NN's refusals are RuntimeErrors of its parser
        print("armnn_run: %s" % str(e).strip().splitlines()[0], file=sys.stderr)
        sys.exit(3)
    if len(ins) != len(ib):
        print("armnn_run: %d inputs for a model of %d" % (len(ins), len(ib)), file=sys.stderr)
        sys.exit(1)
    data = [np.ascontiguousarray(np.load(f)) for f in ins]
    it = ann.make_input_tensors(ib, data)
    ot = ann.make_output_tensors(ob)
    rt.EnqueueWorkload(nid, it, ot)
    for k, r in enumerate(ann.workload_tensors_to_ndarray(ot)):
        np.save(os.path.join(out_dir, "out%d.npy" % k), r)


if __name__ == "__main__":
    main()
