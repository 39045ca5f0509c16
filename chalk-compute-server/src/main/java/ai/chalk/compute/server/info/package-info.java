/**
 * What the server is made of, for clients' health checks: its runtime, the isolation its sandboxes actually get and
 * the caller's sandboxes by state ({@code chalk_compute.serverinfo.v1.ServerInfoService}).
 */
@NullMarked
package ai.chalk.compute.server.info;

import org.jspecify.annotations.NullMarked;
