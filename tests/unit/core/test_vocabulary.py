"""The vocabulary's tables agree with each other and with the code that answers them.

The status tables read recorded and driven replies (``capsim drive``, trace comparison);
the emulator answers with :data:`sim.live.app.HTTP_STATUS`. Both directions must meet:
the outcome the emulator answers with a status is the outcome that status is read as.
"""

from __future__ import annotations

from sim.config.scenario import RETRYABLE_DEFAULT
from sim.core.vocabulary import (
    HANDSHAKE_OUTCOMES,
    HANDSHAKE_STATUS_OUTCOME,
    HTTP_STATUS_OUTCOME,
    LIMIT_STATUSES,
    OUTCOME_STATUS,
    OUTCOMES,
    RPC_32005,
    THROTTLE_STATUSES,
    THROTTLES,
    WS_CU,
    status_outcome,
)


def test_every_http_outcome_has_one_status_and_handshakes_their_own():
    # ws_cu_rejected is a handshake's outcome only; every other one an HTTP reply can have.
    assert set(HTTP_STATUS_OUTCOME.values()) == set(OUTCOMES) - {OUTCOMES[WS_CU]}
    assert len(set(HTTP_STATUS_OUTCOME.values())) == len(HTTP_STATUS_OUTCOME)
    assert set(HANDSHAKE_STATUS_OUTCOME.values()) == set(HANDSHAKE_OUTCOMES)
    assert HANDSHAKE_STATUS_OUTCOME[434] == "ws_cu_rejected"  # spec 7: a CU refusal is 434


def test_the_emulator_answers_each_outcome_with_the_status_read_back_as_it():
    from sim.live.app import HTTP_STATUS

    assert set(HTTP_STATUS) == set(range(len(OUTCOMES)))
    for outcome, status in HTTP_STATUS.items():
        if outcome == RPC_32005:  # a JSON-RPC error travels in a 200, its code in the body
            assert status == 200 and HTTP_STATUS_OUTCOME[-32005] == OUTCOMES[outcome]
        elif outcome == WS_CU:
            assert HANDSHAKE_STATUS_OUTCOME[status] == OUTCOMES[outcome]
        else:
            assert HTTP_STATUS_OUTCOME[status] == OUTCOMES[outcome]


def test_clients_retry_every_throttle_by_default():
    assert {OUTCOMES[t] for t in THROTTLES} <= set(RETRYABLE_DEFAULT)
    assert RETRYABLE_DEFAULT == ("434", "-32005", "430", "435", "ws_cu_rejected")  # docs: scenario


def test_statuses_as_the_spec_writes_them():
    # written out from the spec, not read off the tables
    assert HTTP_STATUS_OUTCOME == {200: "ok", 434: "434", -32005: "-32005", 402: "402",
                                   401: "401", 413: "oversized", 421: "421", 430: "430",
                                   435: "435"}
    assert HANDSHAKE_STATUS_OUTCOME == {101: "ok", 435: "435", 434: "ws_cu_rejected",
                                        401: "401", 402: "402"}
    assert set(THROTTLE_STATUSES) == {434, -32005}
    assert set(LIMIT_STATUSES) == {434, -32005, 430, 435}
    assert set(OUTCOME_STATUS) == set(range(len(OUTCOMES)))


def test_a_recorded_status_reads_as_an_http_outcome_first_then_a_handshake_one():
    assert [status_outcome(s) for s in (200, 101, 434, -32005, 435, 404)] == [
        "ok", "ok", "434", "-32005", "435", None]


def test_calibration_classes_from_the_one_table():
    from sim.calibration.recorded import outcome_class

    got = {s: outcome_class(s) for s in (200, 101, 434, -32005, 402, 435, 401, 421, 430, 413,
                                         404, 500)}
    assert got == {200: "ok", 101: "ok", 434: "throttled", -32005: "throttled", 402: "402",
                   435: "435", 401: "other", 421: "other", 430: "other", 413: "other",
                   404: "other", 500: "other"}
    assert outcome_class(None) is None and outcome_class(float("nan")) is None


def test_the_emulator_table_is_the_vocabulary_s_but_for_json_rpc_in_a_200():
    from sim.live.app import HTTP_STATUS

    want = {o: 200 if o == RPC_32005 else s for o, s in OUTCOME_STATUS.items()}
    assert want == HTTP_STATUS
