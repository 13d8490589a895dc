"""Native queries' progress reaches the driver through sparkcat's JVM listener (jvm ProgressFeed,
sparkcat/spark/progress.py): tracked queries only, every batch in order, the end after the last batch."""

from __future__ import annotations

import json

import pytest

from sparkcat.spark.progress import ProgressListener
from tests.kafka_helpers import wait_until

pytestmark = pytest.mark.integration


def _rate_query(spark, tmp_path, name: str):
    return (spark.readStream.format("rate").option("rowsPerSecond", 50).load()
            .writeStream.format("noop").queryName(name).trigger(processingTime="100 milliseconds")
            .option("checkpointLocation", str(tmp_path / name)).start())


def test_the_feed_keeps_tracked_queries_only_and_their_end_last(spark, tmp_path, unique_name):
    feed = spark.sparkContext._jvm.org.sparkcat.spark.ProgressFeed()
    spark._jsparkSession.streams().addListener(feed)
    tracked, other = _rate_query(spark, tmp_path, unique_name + "_t"), _rate_query(spark, tmp_path, unique_name + "_o")
    try:
        wait_until(lambda: tracked.lastProgress is not None and other.lastProgress is not None,
                   message="a batch of each query")
        assert feed.poll(0) == "[]", "events of queries nobody tracks are not kept"
        feed.track(str(tracked.id))
        events = []
        wait_until(lambda: events.extend(json.loads(feed.poll(200))) or len(events) >= 3,
                   message="three progress events of the tracked query")
        tracked.stop()
        wait_until(lambda: events.extend(json.loads(feed.poll(200))) or events[-1].get("terminated"),
                   message=lambda: f"the tracked query's end (got {events[-3:]})")
        assert {e["id"] for e in events} == {str(tracked.id)}, "only the tracked query's events are queued"
        batches = [e["progress"]["batchId"] for e in events[:-1]]
        assert batches == sorted(batches) and len(set(batches)) == len(batches), batches
        assert events[-1] == {"id": str(tracked.id), "terminated": True}
        assert other.isActive and other.lastProgress is not None  # it ran all along, unreported
        assert feed.poll(0) == "[]"
    finally:
        other.stop()
        tracked.stop()
        spark._jsparkSession.streams().removeListener(feed)


def test_a_closed_listener_takes_no_more_events(spark):
    """Every batch's reporting is covered with real Kafka in test_native_copy.py; here: closing ends the thread."""
    listener = ProgressListener(spark, lambda plan, result: None)
    assert listener._worker.is_alive()
    listener.close()
    assert not listener._worker.is_alive(), "closing ends the thread that takes the events"
