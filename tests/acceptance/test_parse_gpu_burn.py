"""gpu-burn exits 0 with a faulty GPU: only its output tells."""

from acceptance.parsers import gpu_burn

from .sample_files import read


def test_all_ok():
    result = gpu_burn.parse(read("gpu_burn_8x_pass.txt"))
    assert result.error is None
    assert result.metrics["gpus_tested"] == 8
    assert result.metrics["duration_s"] == 3600
    assert set(result.metrics["verdicts"].values()) == {"OK"}
    assert result.metrics["gpus"]["0"]["uuid"].startswith("GPU-8f1c2a4e")
    assert result.metrics["gpus"]["0"]["gflops"] > 40000
    assert result.findings == []


def test_faulty_gpu_in_an_exit_0_run_is_found():
    result = gpu_burn.parse(read("gpu_burn_gpu2_faulty_exit0.txt"))
    assert result.error is None
    assert [f.part for f in result.findings] == ["GPU 2"]
    assert "FAULTY" in result.findings[0].message
    assert result.metrics["gpus"]["2"]["errors"] > 0


def test_run_killed_before_the_summary_is_an_error():
    result = gpu_burn.parse(read("gpu_burn_killed_midrun.txt"))
    assert result.error and "truncated" in result.error
