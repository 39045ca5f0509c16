package ai.chalk.compute.function;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names a function parameter: its Arrow column, the dataset column it binds to in an evaluation, the
 * name callers pass it by.
 *
 * <p>Without it the name comes from the class file, which keeps parameter names only when compiled with
 * {@code -parameters} (Maven: {@code <maven.compiler.parameters>true</maven.compiler.parameters>}; Spring
 * Boot's parent sets it; Gradle: {@code options.compilerArgs << '-parameters'}). Registration fails with a
 * {@link FunctionSignatureException} when neither is there.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface Param {

    /** The parameter's name. */
    String value();
}
