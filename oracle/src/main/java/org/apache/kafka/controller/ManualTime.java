/*
 * kraft-verify's oracle: a clock that moves only when the driver moves it.
 *
 * The controller's session logic (BrokerHeartbeatManager) reads the time; the driver
 * expires one broker's session by setting that broker's last contact in the past, so the
 * clock itself never needs to run and every run is deterministic.
 */
package org.apache.kafka.controller;

import org.apache.kafka.common.utils.Time;

import java.util.function.Supplier;

final class ManualTime implements Time {
    private long nowNs = 1_000_000_000_000L;

    @Override
    public long milliseconds() {
        return nowNs / 1_000_000L;
    }

    @Override
    public long nanoseconds() {
        return nowNs;
    }

    @Override
    public void sleep(long ms) {
        nowNs += ms * 1_000_000L;
    }

    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        throw new UnsupportedOperationException("the oracle never waits");
    }
}
