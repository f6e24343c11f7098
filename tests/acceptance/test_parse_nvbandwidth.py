"""nvbandwidth text: matrices per testcase, SUM lines, N/A cells."""

from acceptance.parsers import nvbandwidth

from .sample_files import read


def test_h100_matrices_and_sums():
    result = nvbandwidth.parse(read("nvbandwidth_h100_pass.txt"))
    assert result.error is None
    assert (result.version, result.driver_version) == ("v0.7", "550.90.07")
    read_ce = result.metrics["testcases"]["device_to_device_memcpy_read_ce"]
    assert read_ce["status"] == "ok"
    assert read_ce["matrix"]["0"]["0"] is None
    assert 390 < read_ce["matrix"]["0"]["1"] < 400
    assert 56 * 390 < read_ce["sum_gbps"] < 56 * 400
    assert result.metrics["devices"]["2"]["bus_id"] == "00000000:3a:00"


def test_low_links_are_read_as_numbers():
    result = nvbandwidth.parse(read("nvbandwidth_h100_gpu6_links_down.txt"))
    row6 = result.metrics["testcases"]["device_to_device_memcpy_write_ce"]["matrix"]["6"]
    assert all(v is None or v < 150 for v in row6.values())


def test_missing_pair_reads_as_none():
    result = nvbandwidth.parse(read("nvbandwidth_h100_missing_pair.txt"))
    assert (
        result.metrics["testcases"]["device_to_device_memcpy_read_ce"]["matrix"]["2"]["5"] is None
    )


def test_testcase_without_sum_is_truncated():
    result = nvbandwidth.parse(read("nvbandwidth_truncated.txt"))
    assert result.error == "truncated: testcase device_to_device_memcpy_write_ce has no SUM line"
