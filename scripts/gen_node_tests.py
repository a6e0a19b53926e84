#!/usr/bin/env python3
"""Writes the ONNX backend node tests of the installed onnx (1.23: opsets up to
23) in the layout of Debian's libonnx-testdata: DIR/node/test_*/model.onnx and
test_data_set_N/{input,output}_N.pb.

The wheel ships the generators, not the data; `onnx.backend.test.cmd_tools
generate-data` only writes the model-zoo cases, so this points it at the node
cases instead."""
import argparse
import os
import sys
import warnings

from onnx.backend.test import cmd_tools
from onnx.backend.test.case import node


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output", help="folder to write (DIR/node/test_* is created)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cases = node.collect_testcases(None)
    cmd_tools.model_test.collect_testcases = lambda: cases
    cmd_tools.generate_data(argparse.Namespace(output=args.output))
    count = len(os.listdir(os.path.join(args.output, "node")))
    print(f"wrote {count} node test cases under {os.path.join(args.output, 'node')}")


if __name__ == "__main__":
    sys.exit(main())
