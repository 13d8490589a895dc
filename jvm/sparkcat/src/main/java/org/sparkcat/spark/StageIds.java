package org.sparkcat.spark;

import java.lang.reflect.Field;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.spark.SparkContext;

/**
 * Starts the driver's stage ids at ten digits, so that Spark's FAIR scheduler serves waiting task sets oldest first.
 *
 * <p>Inside a FAIR pool, task sets with as many running tasks are ordered by name, {@code TaskSet_<stageId>.<attempt>},
 * compared as strings. Once stage ids gain a digit ({@code TaskSet_1000.0} sorts before {@code TaskSet_999.0}), a
 * task set that waits with the shorter id loses every tie to newer ones until their ids catch up with it tenfold:
 * under a steady flow of small jobs (one streaming query per connector) some queries then get no batch for minutes.
 * Ids from 1,000,000,000 up keep ten digits up to Integer.MAX_VALUE, so string order is numeric order.
 */
public final class StageIds {
    /** The first ten-digit int. */
    public static final int FIRST = 1_000_000_000;

    private StageIds() {
    }

    /** Moves the next stage id up to {@link #FIRST} (never down); returns the next stage id. */
    public static int startAtTenDigits(SparkContext sc) throws ReflectiveOperationException {
        Object dagScheduler = sc.dagScheduler();
        Field field = dagScheduler.getClass().getDeclaredField("nextStageId");
        field.setAccessible(true);
        AtomicInteger next = (AtomicInteger) field.get(dagScheduler);
        return next.accumulateAndGet(FIRST, Math::max);
    }
}
