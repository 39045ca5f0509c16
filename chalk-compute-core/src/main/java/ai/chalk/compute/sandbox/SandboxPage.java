package ai.chalk.compute.sandbox;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One page of a sandbox listing.
 *
 * <pre>{@code
 * SandboxPage page = client.list(ListOptions.defaults().limit(50));
 * while (true) {
 *     page.sandboxes().forEach(info -> System.out.println(info.id()));
 *     if (!page.hasMore()) break;
 *     page = client.list(ListOptions.defaults().limit(50).cursor(page.nextCursor().get()));
 * }
 * }</pre>
 *
 * @param sandboxes  the sandboxes on this page
 * @param nextCursor the cursor of the next page, empty on the last page
 */
public record SandboxPage(List<SandboxInfo> sandboxes, Optional<String> nextCursor) {

    /** Copies the list. */
    public SandboxPage {
        sandboxes = List.copyOf(sandboxes);
        Objects.requireNonNull(nextCursor, "nextCursor");
    }

    /** Whether there is a next page. */
    public boolean hasMore() {
        return nextCursor.isPresent();
    }
}
