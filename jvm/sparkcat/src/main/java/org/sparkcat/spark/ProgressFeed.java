package org.sparkcat.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.spark.sql.streaming.StreamingQueryListener;

/**
 * Hands the progress of the queries the driver tracks to Python as JSON text, a batch of events per call.
 *
 * <p>PySpark's own listener bridge calls into Python for every event of every query in the session and then
 * builds each {@code StreamingQueryProgress} field by field over py4j, about thirty round trips per micro-batch
 * (about 75 ms of CPU per event on 2 cores: {@code bench/run.py --only listener}). This listener keeps the events of tracked
 * queries only, each as the JSON Spark already renders, and the driver takes them with {@link #poll}: one
 * call per batch of events, none for the queries it does not track.
 */
public final class ProgressFeed extends StreamingQueryListener {
    private final Set<String> tracked = ConcurrentHashMap.newKeySet();
    private final LinkedBlockingQueue<String> events = new LinkedBlockingQueue<>();

    /** Report the progress and the end of query {@code id} from now on. */
    public void track(String id) {
        tracked.add(id);
    }

    /** Report nothing more of query {@code id}. */
    public void untrack(String id) {
        tracked.remove(id);
    }

    /** How many events wait for {@link #poll}. */
    public int pending() {
        return events.size();
    }

    /**
     * The events queued so far as a JSON array, waiting up to {@code timeoutMs} for the first: each
     * {@code {"id": ..., "progress": {...}}} or {@code {"id": ..., "terminated": true}}; {@code []} when none came.
     */
    public String poll(long timeoutMs) throws InterruptedException {
        String first = events.poll(timeoutMs, TimeUnit.MILLISECONDS);
        if (first == null) {
            return "[]";
        }
        List<String> taken = new ArrayList<>();
        taken.add(first);
        events.drainTo(taken);
        return "[" + String.join(",", taken) + "]";
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {
    }

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
        String id = event.progress().id().toString();
        if (tracked.contains(id)) {
            events.add("{\"id\":\"" + id + "\",\"progress\":" + event.progress().json() + "}");
        }
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {
        String id = event.id().toString();
        // Spark posts a query's progress before its end, so this comes after its last batch in the queue.
        if (tracked.remove(id)) {
            events.add("{\"id\":\"" + id + "\",\"terminated\":true}");
        }
    }
}
