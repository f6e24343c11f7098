"""Text tools run under a launcher (mpirun --tag-output, SkyPilot, srun through a harness logger)
read the same with the launcher's prefix on every line as without it."""

import pytest

from acceptance.parsers import PARSERS

from .sample_files import SAMPLES

PREFIXES = [
    "[1,0]<stdout>:",
    "(head, rank=0, pid=3808) [1,0]<stdout>:",
    "20:22:23 DEBUG| [stdout] ",
    " 0: ",  # srun --label, ranks right-aligned to the widest
    "12: ",
    "12: [1,0]<stdout>:",
]
SAMPLES_BY_TOOL = {
    "nccl": "real/superbench_nccl_reduce.log",
    "perftest": "real/superbench_ib_write_bw_8M.log",
    "fio": "real/fio_text_3.35_seq_write_nvme1n1.txt",
    "dcgm": "real/dcgmi_text_3.3.3_r2_p4de_pass.txt",
}


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("tool", sorted(SAMPLES_BY_TOOL))
def test_prefixed_output_reads_as_the_plain_one(tool, prefix):
    plain = (SAMPLES / SAMPLES_BY_TOOL[tool]).read_text()
    tagged = "\n".join(prefix + line for line in plain.splitlines()) + "\n"
    expected, got = PARSERS[tool](plain), PARSERS[tool](tagged)
    assert expected.error is None and got.error is None, got.error
    assert got.metrics == expected.metrics
    assert got.findings == expected.findings
