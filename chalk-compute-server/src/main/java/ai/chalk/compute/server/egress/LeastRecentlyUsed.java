package ai.chalk.compute.server.egress;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Maps that hold at most a number of entries, dropping the least recently used to take a new one: for what the proxy
 * keeps per name a sandbox chooses, so that naming new ones in a loop costs the server no more memory.
 */
final class LeastRecentlyUsed {

    private LeastRecentlyUsed() {}

    /** A map of at most {@code capacity} entries, safe for several threads (each call holds its lock). */
    static <K, V> Map<K, V> map(int capacity) {
        return Collections.synchronizedMap(new LinkedHashMap<K, V>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
                return size() > capacity;
            }
        });
    }
}
