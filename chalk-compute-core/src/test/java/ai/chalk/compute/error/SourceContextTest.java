package ai.chalk.compute.error;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Numbered source lines under a remote traceback's frames, and frames from a hostile server that read nothing. */
class SourceContextTest {

    @TempDir
    Path sources;

    private static final String PRICING = String.join(
            "\n",
            "package com.acme;",
            "",
            "public class Pricing {",
            "    public double price(String sku, int quantity) {",
            "        Double unit = null;",
            "        if (unit == null) throw new IllegalArgumentException(\"no price for \" + sku);",
            "        return unit * quantity;",
            "    }",
            "}",
            "");

    private SourceContext withPricing() throws IOException {
        Path dir = Files.createDirectories(sources.resolve("com/acme"));
        Files.writeString(dir.resolve("Pricing.java"), PRICING);
        return SourceContext.of(List.of(sources));
    }

    @Test
    void eachFrameWhoseSourceIsFoundGetsItsNumberedLinesWithTheFailingOneMarked() throws IOException {
        String traceback = "java.lang.IllegalArgumentException: no price for sku-0\n"
                + "\tat app//com.acme.Pricing.price(Pricing.java:6)\n"
                + "\tat com.acme.Elsewhere.call(Elsewhere.java:3)\n";

        assertThat(withPricing().annotate(traceback))
                .isEqualTo("java.lang.IllegalArgumentException: no price for sku-0\n"
                        + "\tat app//com.acme.Pricing.price(Pricing.java:6)\n"
                        + "\t       4 |     public double price(String sku, int quantity) {\n"
                        + "\t       5 |         Double unit = null;\n"
                        + "\t     > 6 |         if (unit == null) throw new IllegalArgumentException(\"no price for \" + sku);\n"
                        + "\t       7 |         return unit * quantity;\n"
                        + "\t       8 |     }\n"
                        + "\tat com.acme.Elsewhere.call(Elsewhere.java:3)\n");
    }

    @Test
    void aLineTheFileDoesNotHaveShowsNothingRatherThanTheWrongLines() throws IOException {
        String traceback = "\tat com.acme.Pricing.price(Pricing.java:99)";
        assertThat(withPricing().annotate(traceback)).isEqualTo(traceback);
    }

    @Test
    void framesFromAHostileServerCannotReadFilesOutsideTheSourceRoots() throws IOException {
        Path secret = Files.writeString(sources.getParent().resolve("secret.java"), "TOP SECRET\n");
        SourceContext context = withPricing();
        String hostile = String.join(
                "\n",
                "\tat ../../" + secret.getFileName() + "(secret.java:1)",
                "\tat com.acme.Pricing.price(../../secret.java:1)",
                "\tat ...secret.x(secret.java:1)",
                "\tat com.acme.Pricing.price(/etc/passwd:1)",
                "\tat com.acme.Pricing.price(Pricing.java:-1)");

        assertThat(context.annotate(hostile)).isEqualTo(hostile).doesNotContain("TOP SECRET");
    }

    @Test
    void chalkSourcePathNamesTheRoots() throws IOException {
        withPricing();
        SourceContext fromEnv = SourceContext.fromEnv(Map.of(SourceContext.ENV_SOURCE_PATH, sources.toString()));
        assertThat(fromEnv.annotate("\tat com.acme.Pricing.price(Pricing.java:6)"))
                .contains("> 6 |");
        assertThat(SourceContext.fromEnv(Map.of()).toString()).contains("src/main/java", "src/test/java");
    }
}
