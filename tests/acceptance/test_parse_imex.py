"""`nvidia-imex-ctl -N`: nodes and pairs read from real reports; a node down is blamed once,
a one-way or single pair by its two ends; what is cut is an error."""

from acceptance.parsers import imex

from .sample_files import read

NVL72 = "real/imex_N_570.172_aws_pcluster_p6e_gb200_18_nodes_ready.txt"
GH200 = "real/imex_N_570.00_jpsnips_gh200_2_nodes_ready.txt"


def test_a_real_18_node_domain_reads_whole():
    result = imex.parse(read(NVL72))
    assert result.error is None and result.findings == []
    assert result.version == "570.172"
    assert result.metrics["domain_state"] == "UP"
    assert len(result.metrics["nodes"]) == 18
    assert result.metrics["nodes"]["17"] == {
        "address": "172.31.56.47", "host": None, "status": "READY", "version": "570.172"
    }  # fmt: skip
    assert set(result.metrics["connections"]["9"].values()) == {"C"}


def test_the_older_report_without_a_version_column_reads():
    result = imex.parse(read(GH200))
    assert result.error is None and result.version is None
    assert [n["address"] for n in result.metrics["nodes"].values()] == [
        "10.136.206.47",
        "10.136.206.48",
    ]


def test_a_pair_never_connected_fails_the_pair_not_the_nodes():
    text = read(GH200).replace("       0        C  C", "       0        C  N")
    [finding] = imex.parse(text).findings
    assert finding.part == "IMEX node #0 (10.136.206.47) -> IMEX node #1 (10.136.206.48)"
    assert finding.message.endswith(": never connected")
    assert finding.code == "imex_not_connected"


def test_a_node_connected_to_none_of_its_peers_is_blamed_once():
    text = read(GH200).replace("       0        C  C", "       0        C  I")
    text = text.replace("       1        C  C", "       1        N  C")
    text = text.replace("10.136.206.48   - READY", "10.136.206.48   - UNAVAILABLE")
    text = text.replace("Domain State: UP", "Domain State: DEGRADED")
    found = {(f.part, f.code) for f in imex.parse(text).findings}
    # With two nodes each is cut off from its only peer: both are named, never the pair.
    assert found == {
        ("IMEX node #1 (10.136.206.48)", "imex_node_not_ready"),
        ("IMEX node #0 (10.136.206.47)", "imex_node_unreachable"),
        ("IMEX node #1 (10.136.206.48)", "imex_node_unreachable"),
        ("IMEX domain", "imex_domain_down"),
    }


def test_a_version_or_node_map_mismatch_names_the_pair():
    text = read(NVL72).replace(
        "       3        C   C   C   C   C   C   C   C",
        "       3        C   C   C   C   C   C   C   !V!",
    )
    [finding] = imex.parse(text).findings
    assert finding.part == "IMEX node #3 (172.31.49.228) -> IMEX node #7 (172.31.51.157)"
    assert "version mismatch" in finding.message


def test_a_report_cut_or_short_of_a_row_is_an_error():
    text = read(NVL72)
    assert "no 'Domain State:'" in imex.parse(text[: text.index("Domain State")]).error
    assert "no connectivity table" in imex.parse(text[: text.index(" Nodes From")]).error
    no_row = text.replace(text[text.index("      17        C") : text.index("\n\nDomain")], "")
    assert "17 rows and 18 columns for 18 nodes" in imex.parse(no_row).error
    short = text.replace("      12        C   C", "      12        C", 1)
    assert "row 12 has a cell per node missing" in imex.parse(short).error
    odd = text.replace("       4        C   C", "       4        C   X", 1)
    assert "unknown IMEX connection state(s): X" in imex.parse(odd).error
