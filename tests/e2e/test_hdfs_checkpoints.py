"""Two drivers of one cluster sharing ``checkpoint.dir`` on a real HDFS (Hadoop's MiniDFSCluster, tests/yarn_cluster.py).

As docs/running.md ("Several drivers", "Checkpoints on HDFS") says: with checkpoints on storage every driver
reaches, the standby that takes over after the leader's kill -9 resumes from the leader's own checkpoint
instead of dropping it for the store's offsets, and an exactly-once source still writes every position once.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.driver_process import kill_session, start_driver_process
from tests.integration.runtime.test_leadership import (
    CONFIG,
    FAST_GROUP,
    _leader_of,
    assert_continues,
    assert_each_once,
    cluster_fields,
    positions,
)
from tests.kafka_helpers import end_offsets, read_topic, wait_until

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(600)
def test_a_standby_resumes_from_the_killed_leaders_checkpoint_on_hdfs_exactly_once(mini_hadoop, broker, tmp_path,
                                                                                   unique_name):
    prefix, topic = f"{unique_name}-seq_", f"{unique_name}-seq_1"
    checkpoints = f"{mini_hadoop.default_fs}/sparkcat/{unique_name}/checkpoints"
    one, two = ({**cluster_fields(broker.bootstrap, tmp_path, unique_name, d), **FAST_GROUP,
                 "checkpoint_dir": checkpoints} for d in ("one", "two"))
    leader = start_driver_process(one, {}, tmp_path / "one.log", {}, module="tests.ha_driver")
    standby = None
    try:
        url, url_two = f"http://127.0.0.1:{one['rest_port']}", f"http://127.0.0.1:{two['rest_port']}"
        wait_until(lambda: (_leader_of(url) or ("",))[0] == "leader", timeout_s=180,
                   message=lambda: "the first driver to lead: " + (tmp_path / "one.log").read_text()[-2000:])
        created = httpx.post(url + "/connectors", json={"name": "inc", "config": {**CONFIG, "topic.prefix": prefix}},
                             timeout=90)
        assert created.status_code == 201, created.text
        standby = start_driver_process(two, {}, tmp_path / "two.log", {}, module="tests.ha_driver")
        wait_until(lambda: (tmp_path / "two.started").exists() and _leader_of(url_two) == ("standby", url),
                   timeout_s=180,
                   message=lambda: "the second driver to stand by: " + (tmp_path / "two.log").read_text()[-2000:])
        wait_until(lambda: len(positions(broker.bootstrap, topic)) >= 300, timeout_s=120,
                   message="records from the leader")
        # The source shares a query with any other (spark/driver/shared_sources.py): its checkpoint is the group's.
        listed = mini_hadoop.hdfs("-ls", f"/sparkcat/{unique_name}/checkpoints")
        group = re.search(r"/checkpoints/(_sparkcat-shared-sources-[^/\s]+)", listed.stdout)
        assert group, listed.stdout + listed.stderr[-2000:]
        commits = mini_hadoop.hdfs("-ls", f"/sparkcat/{unique_name}/checkpoints/{group.group(1)}/commits")
        assert commits.returncode == 0 and "/commits/0" in commits.stdout, commits.stderr[-2000:]

        kill_session(leader)
        ends = end_offsets(broker.bootstrap, topic)

        def newer() -> list[tuple]:
            return [r for r in read_topic(broker.bootstrap, topic) if r[1] >= ends[r[0]]]

        wait_until(lambda: len(newer()) >= 200, timeout_s=180, message=lambda: "the new leader to go on: "
                   + (tmp_path / "two.log").read_text()[-3000:])
        assert _leader_of(url_two) == ("leader", url_two)
        assert_each_once(positions(broker.bootstrap, topic))
        assert_continues(broker.bootstrap, topic, ends)
    finally:
        if leader.poll() is None:
            kill_session(leader)
        if standby is not None:
            kill_session(standby)
    log = (tmp_path / "two.log").read_text()
    assert f"checkpoint {checkpoints}/_sparkcat-shared-sources-" in log, "the new leader's query runs on the " \
        "shared checkpoint"
    assert "dropping checkpoint" not in log, "the shared checkpoint is the cluster's: nothing to drop"
    first = re.search(r"Shared query sparkcat-shared-sources-\S+: first batch (\d+) of this query begins", log)
    assert first and int(first.group(1)) > 0, "the new leader's query goes on with the leader's batches"
