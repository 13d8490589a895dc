"""Native queries' progress reaches the driver through sparkcat's JVM listener (jvm ProgressFeed,
sparkcat/spark/driver/progress.py): tracked queries only, every batch in order, the end after the last batch."""

from __future__ import annotations

import json

import pytest

from sparkcat.spark.query_plan import QueryPlan
from sparkcat.spark.driver.progress import ProgressListener, Tracked
from tests.kafka_helpers import create_topic, produce, wait_until

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


def test_batches_that_ended_before_tracking_began_are_reported(spark, broker, tmp_path, unique_name):
    """Spark may end a query's first batch between ``start()`` returning and ``track()``: it still counts."""
    topic = f"{unique_name}-in"
    create_topic(broker.bootstrap, topic, partitions=1)
    produce(broker.bootstrap, topic, [b"r%d" % i for i in range(7)])
    reported = []
    listener = ProgressListener(spark, lambda plan, result: reported.append(result))
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .writeStream.format("noop").queryName(unique_name).trigger(processingTime="100 milliseconds")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        wait_until(lambda: query.lastProgress is not None and query.lastProgress["numInputRows"] == 7,
                   message="the query's first batch, before anything tracks it")
        plan = QueryPlan(unique_name, "sink", "x:C", "x:T", {"topics": topic}, [{}], str(tmp_path / "ck"))
        listener.track(str(query.id), Tracked(plan, {(topic, 0): 0}, False),
                       lambda: [json.loads(p.json) for p in query.recentProgress])
        assert [(r.tasks[0].records, r.tasks[0].offsets) for r in reported] == [
            (7, [({"kafka_topic": topic, "kafka_partition": 0}, {"kafka_offset": 7})])]
        produce(broker.bootstrap, topic, [b"s%d" % i for i in range(3)])
        wait_until(lambda: sum(r.tasks[0].records for r in reported) == 10,
                   message=lambda: f"the next batch from the feed (got {reported})")
        assert [r.batch_id for r in reported] == sorted({r.batch_id for r in reported})  # each batch once, in order
    finally:
        query.stop()
        listener.close()
