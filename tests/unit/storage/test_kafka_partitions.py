"""A log's first read of a topic created a moment ago waits for its partition leaders instead of failing."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from confluent_kafka import KafkaError, KafkaException

from sparkcat.storage.kafka.partitions import stable_ends


class _Offsets:
    def __init__(self, offset: int) -> None:
        self.offset = offset


class _Admin:
    """ListOffsets that answers like a broker whose new topic has no leader yet, ``failures`` times."""

    def __init__(self, failures: int, code: int) -> None:
        self.failures, self.code, self.calls = failures, code, 0

    def list_offsets(self, requests, isolation_level, request_timeout):
        self.calls += 1
        out = {}
        for tp in requests:
            future: Future = Future()
            if self.calls <= self.failures:
                future.set_exception(KafkaException(KafkaError(self.code, "Failed to query partition leaders: "
                                                                          "No leaders found")))
            else:
                future.set_result(_Offsets(7 + tp.partition))
            out[tp] = future
        return out


@pytest.mark.parametrize("code", [KafkaError._NOENT, KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.LEADER_NOT_AVAILABLE])
def test_no_leader_yet_is_waited_for(code):
    admin = _Admin(failures=3, code=code)
    assert stable_ends(admin, "t-status", 2, timeout_s=5) == {0: 7, 1: 8}
    assert admin.calls == 4


def test_a_refusal_is_raised_at_once():
    admin = _Admin(failures=1, code=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        stable_ends(admin, "t-status", 1, timeout_s=5)
    assert admin.calls == 1
