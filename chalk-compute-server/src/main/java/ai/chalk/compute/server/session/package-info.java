/**
 * {@code chalk.sandbox.v2.SandboxProcessService}: processes whose sessions outlive the client's
 * stream, with bounded per-session output buffers (reserved from a server-wide budget, a capped
 * number per sandbox), replay after re-attach, and one-shot commands.
 */
@NullMarked
package ai.chalk.compute.server.session;

import org.jspecify.annotations.NullMarked;
