package ai.chalk.compute.server.runtime.local.image;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/** One monitor per cache key, so that concurrent requests for the same entry produce it once. */
final class KeyLocks {

    private final ConcurrentMap<String, Object> locks = new ConcurrentHashMap<>();

    Object of(String key) {
        return locks.computeIfAbsent(key, k -> new Object());
    }
}
