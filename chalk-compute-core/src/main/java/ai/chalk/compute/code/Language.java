package ai.chalk.compute.code;

/** The language {@link CodeSandbox#runCode(String)} runs. */
public enum Language {
    /** Python 3, the sandbox image's {@code python3}, one persistent interpreter per sandbox. */
    PYTHON,
    /** Java, through JShell on the sandbox image's JDK, one persistent JShell state per {@link CodeSandbox}. */
    JAVA
}
