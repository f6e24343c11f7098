"""The lab's `dcgmi mndiag --json` (lab.tool_outputs.mndiag) is written as dcgmi writes it: its
jsoncpp writer gives jsoncpp's own expected output and a real `dcgmi diag -j` capture line for
line, and the source-derived samples are what the lab prints for their runs."""

from __future__ import annotations

import json
import random

from lab.tool_outputs.mndiag import (
    CUBLAS_ERROR,
    CUDA_ERROR,
    MnHost,
    mndiag_json,
    mndiag_runtime_error,
    styled,
    unable_to_complete,
)
from tests.acceptance.sample_files import read

NAMES = [f"gb200-r07-c{i:02d}" for i in range(1, 19)]


def test_the_writer_gives_jsoncpps_own_expected_output():
    # jsoncpp 1.9.6, src/test_lib_json/main.cpp, StreamWriterTest/writeNestedObjects (MIT).
    expected = (
        '{\n\t"object1" : \n\t{\n\t\t"bool" : true,\n\t\t"nested" : 123\n\t},\n\t"object2" : {}\n}'
    )
    assert styled({"object2": {}, "object1": {"nested": 123, "bool": True}}) == expected


def test_the_writer_gives_a_real_dcgmi_capture_line_for_line():
    # The stored copy of the capture lost its trailing spaces: compare lines without them.
    real = read("real/dcgmi_json_4.2.3_r1_gb10_software_fail.json")
    ours = styled(json.loads(real))
    assert [line.rstrip() for line in ours.split("\n")] == real.rstrip("\n").split("\n")


def test_the_derived_samples_are_what_the_lab_prints():
    order = list(range(18))
    random.Random(72).shuffle(order)
    assert read("mndiag/mndiag_4.6.0_18_hosts_pass.derived.json") == mndiag_json(
        [MnHost(name) for name in NAMES], order
    )
    failing = [
        MnHost(n, errors={2: (CUDA_ERROR, CUBLAS_ERROR)} if n.endswith("c07") else {})
        for n in NAMES
    ]
    assert read("mndiag/mndiag_4.6.0_18_hosts_c07_gpu2_fail.derived.json") == mndiag_json(
        failing, order
    )
    message = unable_to_complete("An SSH connection to a remote hostengine failed", -61)
    assert read("mndiag/mndiag_4.6.0_ssh_runtime_error.derived.json") == (
        mndiag_runtime_error(message)
    )
