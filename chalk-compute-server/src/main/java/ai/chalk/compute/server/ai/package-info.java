/**
 * The AI router ({@code chalk_compute.ai.v1.AiRouterService}): OpenAI-compatible requests forwarded to the one
 * provider the server is configured with, carrying the provider key only the server holds.
 */
@NullMarked
package ai.chalk.compute.server.ai;

import org.jspecify.annotations.NullMarked;
