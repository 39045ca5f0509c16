/**
 * What the helpers built on exec (files, git) need of a sandbox, in types of their own: {@code Sandbox} hands the
 * helpers out ({@code sandbox.files()}, {@code sandbox.git()}) and implements this for them, so they never depend on
 * the package that depends on them.
 */
@NullMarked
package ai.chalk.compute.sandbox.spi;

import org.jspecify.annotations.NullMarked;
