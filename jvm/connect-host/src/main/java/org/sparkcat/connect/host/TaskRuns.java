package org.sparkcat.connect.host;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.logging.Logger;

/**
 * The Java tasks of one kind running in this JVM (an executor, or the driver in local mode), by connector and task:
 * the executor-side cache that keeps a task alive across micro-batches, as Spark's Kafka consumer pool keeps
 * consumers.
 *
 * <p>A request whose {@code generation} differs from the running task's (a new query run: restart, new task
 * configs), or that the run is no longer current for ({@link TaskRun#current}), stops the old instance and starts a
 * new one. A task that throws is stopped and forgotten, so a retried
 * batch starts it afresh from what was committed. An instance no batch used for its idle limit is stopped (its
 * query ended, or its task moved to another executor).
 */
final class TaskRuns<R extends TaskRun> {
    /** What the driver finds in a failed query's error to tell which task failed (Python's TASK_FAILURE_MARK). */
    static final String FAILURE_MARK = "sparkcat task failed:";
    private static final Logger LOG = Logger.getLogger(TaskRuns.class.getName());

    /** One call on a task's run; may throw anything, which fails the task. */
    interface Call<R, T> {
        T apply(R run) throws Exception;
    }

    private final Map<String, R> running = new ConcurrentHashMap<>();
    private final Map<String, Long> idleLimits = new ConcurrentHashMap<>();
    private final Function<JsonNode, R> starter;
    private final ScheduledExecutorService reaper = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread thread = new Thread(r, "sparkcat-java-task-reaper");
        thread.setDaemon(true);
        return thread;
    });

    TaskRuns(Function<JsonNode, R> starter) {
        this.starter = starter;
        reaper.scheduleWithFixedDelay(this::stopIdle, 10, 10, TimeUnit.SECONDS);
    }

    /**
     * {@code call} on task {@code task} of the request's connector, started from {@code request} when no run of its
     * generation is here. Any failure stops the run and raises a JDK exception naming the task, with the task's
     * trace as text: Spark ships a task's failure to the driver serialised, and a plugin's own exception classes
     * exist only in its isolated class loader (the driver would see "UnknownReason" and lose the message).
     */
    <T> T with(JsonNode request, int task, Call<R, T> call) {
        String connector = request.get("connector").asText();
        String key = connector + "\u0000" + task;
        R run = null;
        try {
            synchronized (this) {
                run = running.get(key);
                if (run != null && (!run.generation().equals(request.get("generation").asText())
                        || !run.current(request))) {
                    running.remove(key);
                    run.close();
                    run = null;
                }
                if (run == null) {
                    run = starter.apply(request);
                    running.put(key, run);
                    LOG.info("Task " + connector + "-" + task + " started in this JVM");
                }
                idleLimits.put(key, request.path("idle_ms").asLong(120_000));
            }
            return call.apply(run);
        } catch (Exception | Error e) {
            if (run != null && running.remove(key, run)) {
                run.close();
            }
            Throwable cause = e instanceof WrappedStart ? e.getCause() : e;
            throw new RuntimeException(FAILURE_MARK + " " + connector + "-" + task + ": "
                    + cause.getClass().getSimpleName() + ": " + cause.getMessage() + "\n"
                    + HostedConnector.trace(cause));
        }
    }

    /** Stop every task of {@code connector} running here (its query ended on the driver). */
    synchronized void stopConnector(String connector) {
        running.entrySet().removeIf(e -> {
            boolean ours = e.getKey().startsWith(connector + "\u0000");
            if (ours) {
                e.getValue().close();
            }
            return ours;
        });
    }

    private synchronized void stopIdle() {
        long now = System.currentTimeMillis();
        running.entrySet().removeIf(e -> {
            boolean idle = now - e.getValue().lastUsedMs() > idleLimits.getOrDefault(e.getKey(), 120_000L);
            if (idle) {
                LOG.info("Task " + e.getKey().replace('\u0000', '-') + " stopped: no batch used it lately");
                e.getValue().close();
            }
            return idle;
        });
    }

    /** A task's start failed with a checked exception: carried through {@link Function#apply}. */
    static final class WrappedStart extends RuntimeException {
        WrappedStart(Throwable cause) {
            super(cause);
        }
    }
}
