"""Split brain on a real network cut: a leader cut off from Kafka stops leading before another driver leads.

Two driver processes with state directories of their own share one Kafka. The leader reaches the broker
only through a TCP proxy the test controls (``tests.tcp_proxy``: the broker advertises the proxy on a
listener of its own, so every connection of that driver, its Spark JVM's included, goes through it); the
standby connects directly. With an exactly-once ``increment`` source and an exactly-once ``kafka`` copy
running, the proxy is cut (silence, not refusals: a partition, not a dead broker). The cut-off leader
must stop leading (no new batch, its queries cancelled) before the coordinator can give partition 0 to
the standby, and say why on ``/health``; the standby takes over. Sampled throughout, the two drivers
never both say they lead. Both topics, read ``read_committed``, hold every position once.

Then the cut heals (the proxy closes every hung connection and forwards again, as a partition that ends):
the cut-off driver's process must live on (librdkafka 2.16 aborted it with ``rd_kafka_enq_once_del_source_return:
Assertion 'eonce->refcnt > 0' failed`` when the membership described the group with a coordinator-targeted
admin request at the reconnection, see ``sparkcat.kafka.group_members``), report healthy again, stand by
behind the new leader and run nothing, while the new leader goes on.

The same cut with both connectors at least once measures the overlap, counted after the heal (the cut-off
driver's blocked writes land then): nothing is lost, and a position appears twice only if it is newer than
what was committed at the cut (read from the offsets store through the standby, which cannot have written
yet): what the cut-off leader wrote but could not commit is all the new leader writes again. A batch
stores its positions before the next one starts, so that is at most one batch per connector: at most
``batch.max.records`` source positions twice, and for the copy its own batch plus what the source wrote
twice. The overlap is printed ("overlap N position(s) written twice").
"""

from __future__ import annotations

import collections
import time

import httpx
import pytest

from tests.broker import KafkaBroker, free_port
from tests.driver_process import end_sessions
from tests.integration.runtime.test_leadership import CONFIG, FAST_GROUP, assert_each_once, cluster_fields, positions
from tests.integration.runtime.test_leadership_return import (COPY_BATCH, counts, grown, role, server_info,
                                                              start_leader_and_standby)
from tests.kafka_helpers import wait_until
from tests.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


@pytest.fixture
def cut_broker(tmp_path):
    """A broker of this test's own with a second listener behind a TCP proxy: (broker, proxy)."""
    behind = free_port()
    proxy = TcpProxy(behind)
    with KafkaBroker(log_dir=tmp_path / "kafka", extra_listener=("CUT", behind, proxy.port)) as broker:
        proxy.start()
        try:
            yield broker, proxy
        finally:
            proxy.close()


def health(url: str) -> tuple[int, str] | None:
    try:
        answer = httpx.get(url + "/health", timeout=5)
        return answer.status_code, answer.json().get("message", "")
    except httpx.HTTPError:
        return None


def running(url: str) -> list[str] | None:
    info = server_info(url)
    return None if info is None else info.get("sparkcat_running_connectors")


class Overlap:
    """Samples both drivers' roles; remembers any moment both said they lead."""

    def __init__(self, urls: tuple[str, str]):
        self.urls, self.both = urls, []

    def sample(self) -> tuple[str | None, str | None]:
        now = tuple((role(u) or (None,))[0] for u in self.urls)
        if now == ("leader", "leader"):
            self.both.append(time.strftime("%H:%M:%S"))
        return now


@pytest.mark.parametrize("exactly_once", [True, False], ids=["exactly-once", "at-least-once"])
def test_a_leader_cut_off_from_kafka_stops_before_the_standby_leads_and_stands_by_after(cut_broker, tmp_path,
                                                                                      unique_name, exactly_once):
    broker, proxy = cut_broker
    direct, behind = broker.bootstrap, f"127.0.0.1:{proxy.port}"
    prefix = f"{unique_name}-seq_"
    topics = (prefix + "1", prefix + "1.copy")
    delivery = {} if exactly_once else {"exactly_once_source_support": "disabled"}
    one = {**cluster_fields(behind, tmp_path, unique_name, "one"), **FAST_GROUP, **delivery}
    two = {**cluster_fields(direct, tmp_path, unique_name, "two"), **FAST_GROUP, **delivery}
    urls = tuple(f"http://127.0.0.1:{d['rest_port']}" for d in (one, two))
    url_one, url_two = urls
    logs = {name: tmp_path / f"{name}.log" for name in ("one", "two")}

    def tail(name: str) -> str:
        return logs[name].read_text()[-4000:]

    children: list = []
    overlap = Overlap(urls)
    try:
        start_leader_and_standby((one, two), logs, tmp_path, direct, prefix, children, exactly_once)
        wait_until(lambda: grown(direct, topics, (0, 0)) and running(url_one) == ["copy", "inc"],
                   message="records from the first leader")
        # The cut comes once each connector committed a batch after the standby joined (the leader kept leading
        # through that join's rebalance, and what was committed before the cut bounds what is written again).
        joined = committed_offsets(url_two, topics[0])
        wait_until(lambda: all(now > then for now, then in zip(committed_offsets(url_two, topics[0]), joined)),
                   timeout_s=120, interval_s=0.2,
                   message=lambda: f"a committed batch of each connector after {joined}: " + tail("one"))

        proxy.cut()
        at_cut = counts(direct, topics)
        committed = None if exactly_once else committed_at_cut(url_two, direct, topics[0])

        def cut_off_leader_stepped_down() -> bool:
            state = health(url_one)
            return overlap.sample()[0] == "standby" and state is not None and state[0] == 503 \
                and "coordinator is not running" in state[1]

        # Its queries are cancelled, but a batch blocked in a call to Kafka ends only when the client gives
        # up or the network returns; it cannot commit meanwhile (no network, and its lease is fenced).
        wait_until(cut_off_leader_stepped_down, timeout_s=60,
                   message=lambda: f"the cut-off leader to step down and say why ({health(url_one)}): " + tail("one"))
        wait_until(lambda: overlap.sample()[1] == "leader" and running(url_two) == ["copy", "inc"]
                   and grown(direct, topics, at_cut), timeout_s=120,
                   message=lambda: "the standby to lead and go on: " + tail("two"))

        cut_counts = counts(direct, topics)
        wait_until(lambda: overlap.sample() and grown(direct, topics, cut_counts), message="the new leader to go on")
        assert health(url_one)[0] == 503, "the cut-off driver must stay unhealthy while it cannot reach Kafka"

        proxy.heal()
        old_leader = children[0]

        def alive() -> bool:
            code = old_leader.poll()
            assert code is None, f"the healed driver's process ended with {code}: " + tail("one")
            return True

        def healed_driver_stands_by() -> bool:
            state = health(url_one)
            return alive() and overlap.sample() == ("standby", "leader") and role(url_one) == ("standby", url_two) \
                and state is not None and state[0] == 200
        wait_until(healed_driver_stands_by, timeout_s=120, interval_s=0.2,
                   message=lambda: f"the healed driver to stand by behind {url_two} ({health(url_one)}): " + tail("one"))
        healed_counts = counts(direct, topics)
        wait_until(lambda: alive() and overlap.sample() == ("standby", "leader") and running(url_one) == []
                   and grown(direct, topics, healed_counts), timeout_s=120,
                   message=lambda: "the leader to go on beside the healed standby: " + tail("one"))
        alive()
        assert overlap.both == [], f"both drivers said they led at once: {overlap.both}"
        if exactly_once:
            for topic in topics:
                assert_each_once(positions(direct, topic))
        else:
            source, copy = committed
            # A batch stores its positions before the next one starts, so each connector has at most one batch
            # written and not committed when the cut comes; what the cut-off driver's blocked writes deliver
            # after the heal belongs to that batch. The copy also copies again what the source wrote again.
            again = assert_at_least_once(positions(direct, topics[0]), source, topics[0],
                                         int(CONFIG["batch.max.records"]))
            assert_at_least_once(positions(direct, topics[1]), min(source, copy), topics[1], COPY_BATCH + again)
    finally:
        end_sessions(children)


def committed_at_cut(standby: str, bootstrap: str, topic: str) -> tuple[int, int]:
    """The newest committed position of the source and of its copy, read through the standby right after the cut.

    The cut-off leader can no longer write, and the standby, still a standby after the read, has not
    written either: these are the positions the new leader resumes after.
    """
    source, copied = committed_offsets(standby, topic)
    # The copy's offset is the next one of the source topic to read; without transactions (at least once)
    # the records before it are the source's first positions, each once (one leader so far).
    assert (role(standby) or (None,))[0] == "standby", "the standby led before the committed positions were read"
    # Read after the check: the first ``copied`` records of the topic never change, whoever leads now, and
    # reading the whole topic takes longer than the standby's session timeout on a loaded machine.
    copy = max(positions(bootstrap, topic)[:copied], default=0)
    print(f"committed at the cut: source position {source}, copy through position {copy}")
    return source, copy


def committed_offsets(url: str, topic: str) -> tuple[int, int]:
    """What the offsets store holds now, read through ``url``: the source's newest committed position and the
    copy's next offset to read of ``topic`` (summed over its partitions)."""
    def offsets(name: str) -> list:
        answer = httpx.get(f"{url}/connectors/{name}/offsets", timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()["offsets"]

    source = max((o["offset"]["position"] for o in offsets("inc")), default=0)
    copied = sum(o["offset"]["kafka_offset"] for o in offsets("copy") if o["partition"]["kafka_topic"] == topic)
    return source, copied


def assert_at_least_once(got: list[int], settled: int, topic: str, bound: int) -> int:
    """Every position is there; the ones written twice are all newer than ``settled``, and ``bound`` at most.

    Prints the overlap (the positions written twice) and returns how many there are.
    """
    seen = collections.Counter(got)
    missing = sorted(set(range(1, max(got) + 1)) - set(seen))
    assert not missing, f"{topic}: positions lost: {missing[:20]}"
    twice = sorted(p for p, n in seen.items() if n > 1)
    print(f"{topic}: {len(got)} records, overlap {len(twice)} position(s) written twice (bound {bound}) "
          f"({twice[:1]}..{twice[-1:]}), newest settled position {settled}")
    assert all(p > settled for p in twice), (
        f"{topic}: positions committed before the cut were written again: {[p for p in twice if p <= settled][:20]}")
    assert len(twice) <= bound, f"{topic}: {len(twice)} positions written twice, more than {bound}: {twice[:20]}..."
    return len(twice)
