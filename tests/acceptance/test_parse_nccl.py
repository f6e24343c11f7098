"""all_reduce_perf text: table rows of both column layouts, plateau, and the Avg line kept apart."""

from acceptance.parsers import nccl

from .sample_files import read


def test_two_node_run_reads_rows_plateau_and_avg():
    result = nccl.parse(read("nccl_allreduce_2node_pass.txt"))
    assert result.error is None
    assert result.version == "2.13.11"
    metrics = result.metrics
    assert len(metrics["rows"]) == 32
    assert metrics["max_size_bytes"] == 17179869184
    assert metrics["hosts"] == ["gpu-a07", "gpu-a08"]
    assert metrics["ranks"] == 16
    assert 370 < metrics["plateau_busbw_gbps"] < 390
    # The Avg line averages in 8-byte messages: far below the plateau on a healthy fabric.
    assert metrics["avg_busbw_gbps"] < 0.5 * metrics["plateau_busbw_gbps"]
    assert result.findings == []


def test_plateau_comes_from_the_table_not_the_avg_line():
    result = nccl.parse(read("nccl_allreduce_avg_line_lies.txt"))
    assert result.metrics["avg_busbw_gbps"] == 391.2
    assert result.metrics["plateau_busbw_gbps"] < 240


def test_older_layout_without_root_column_and_unvalidated_rows():
    result = nccl.parse(read("nccl_allreduce_old_format_pass.txt"))
    assert result.error is None
    assert result.version is None
    assert result.metrics["rows"][0]["size_bytes"] == 8
    assert result.metrics["max_size_bytes"] == 8589934592
    assert 370 < result.metrics["plateau_busbw_gbps"] < 390
    assert result.metrics["wrong"] == 0


def test_wrong_values_are_a_finding():
    text = read("nccl_allreduce_2node_pass.txt").replace(
        "# Out of bounds values : 0 OK", "# Out of bounds values : 12 FAILED"
    )
    result = nccl.parse(text)
    assert [f.code for f in result.findings] == ["nccl_wrong_values"]


def test_truncated_table_is_an_error():
    result = nccl.parse(read("nccl_allreduce_truncated.txt"))
    assert result.error and "truncated" in result.error


def test_a_table_of_zero_byte_rows_has_no_plateau():
    text = read("real/nccl_aws_awsome_readme_eks_rows_elided.txt")
    rows = [line for line in text.splitlines() if "float     sum" in line]
    only_zero = "\n".join(line for line in text.splitlines() if line not in rows[1:])
    assert nccl.parse(text).metrics["plateau_busbw_gbps"] == 279.0
    result = nccl.parse(only_zero)
    assert result.error and "no plateau" in result.error
