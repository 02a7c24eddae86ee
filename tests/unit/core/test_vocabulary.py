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
    OUTCOMES,
    RPC_32005,
    THROTTLES,
    WS_CU,
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
