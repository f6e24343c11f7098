"""fio JSON: KiB/s to MB/s, per-drive throughput, job errors, banner lines before the JSON."""

from acceptance.parsers import fio

from .sample_files import read


def test_eight_drives_read_and_write():
    result = fio.parse(read("fio_8x_nvme_pass.json"))
    assert result.error is None
    assert result.version == "3.36"
    devices = result.metrics["devices"]
    assert sorted(devices) == [f"nvme{i}n1" for i in range(8)]
    # bw is KiB/s: 6912 MB/s was written as 6750000 KiB/s.
    assert abs(devices["nvme0n1"]["read_mbps"] - 6912) < 1
    assert abs(devices["nvme0n1"]["write_mbps"] - 4105) < 1
    assert result.metrics["jobs"][0]["read_lat_mean_us"] > 1000
    assert result.findings == []


def test_eio_on_one_drive_names_it_and_skips_the_stderr_banner():
    result = fio.parse(read("fio_nvme5_eio.json"))
    assert result.error is None
    assert {f.part for f in result.findings} == {"nvme5n1"}
    assert all("EIO" in f.message for f in result.findings)


def test_truncated_json_is_an_error():
    result = fio.parse(read("fio_truncated.json"))
    assert result.error and "truncated" in result.error
