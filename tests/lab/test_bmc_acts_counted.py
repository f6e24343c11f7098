"""The lab BMC counts the mutating acts it answers at once (issue 36: no BMC may see two)."""

from __future__ import annotations

import threading

import httpx

from lab.bmc import update_service
from lab.hall import LabHall

UPDATE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"


def test_two_acts_answered_at_once_are_counted(monkeypatch):
    # The BMC holds its answer to a BIOS update; a BIOS settings PATCH arrives meanwhile.
    monkeypatch.setattr(update_service, "UPDATE_ANSWER_HOLD_SECONDS", 1.0)
    with LabHall(1, flavours=("ami",), speed=0, seed=5) as hall:
        bmc = hall.bmc(0)
        hall.set_fault(0, "update_answer_held:bios")
        auth = (bmc.node.username, bmc.node.password)
        answers: list[int] = []

        def update() -> None:
            with httpx.Client(base_url=bmc.http_url, auth=auth, timeout=10) as http:
                body = {"ImageURI": "http://files.test/bios-9.9.bin", "TransferProtocol": "HTTP"}
                answers.append(http.post(UPDATE, json=body).status_code)

        held = threading.Thread(target=update)
        held.start()
        with httpx.Client(base_url=bmc.http_url, auth=auth, timeout=10) as http:
            for _ in range(100):  # until the update is being answered
                if bmc.node.acts_in_flight:
                    break
                threading.Event().wait(0.02)
            http.get("/redfish/v1/Systems")  # reads are not acts
            assert bmc.node.acts_in_flight == 1
            http.post(
                UPDATE,
                json={"ImageURI": "http://files.test/bmc-9.9.bin", "TransferProtocol": "HTTP"},
            )
        held.join()
        assert answers == [202]
        assert bmc.node.most_acts_in_flight == 2
        assert bmc.node.acts_in_flight == 0
