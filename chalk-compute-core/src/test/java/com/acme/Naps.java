package com.acme;

import ai.chalk.compute.function.ChalkFunction;
import java.util.concurrent.atomic.AtomicInteger;

/** A function that sleeps and reports how many of its calls were running at once, at the most. */
public class Naps {

    private static final AtomicInteger RUNNING = new AtomicInteger();
    private static final AtomicInteger MOST = new AtomicInteger();

    @ChalkFunction
    public static int nap(long millis) throws InterruptedException {
        MOST.accumulateAndGet(RUNNING.incrementAndGet(), Math::max);
        try {
            Thread.sleep(millis);
        } finally {
            RUNNING.decrementAndGet();
        }
        return MOST.get();
    }
}
