package com.acme;

import ai.chalk.compute.evaluation.EvaluationScorerResult;
import ai.chalk.compute.function.ChalkClass;
import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;
import ai.chalk.compute.function.Default;
import ai.chalk.compute.function.Param;
import ai.chalk.compute.image.Image;
import java.util.List;
import java.util.Map;

/** One mistake per nested class, for the registry's messages. */
public final class Broken {

    private Broken() {}

    public record Tagged(String name, List<Object> tags) {}

    public static class NestedObject {
        @ChalkFunction
        public static int count(Tagged tagged) {
            return 0;
        }
    }

    public static class ReturnsObject {
        @ChalkFunction
        public static Object load(String key) {
            return key;
        }
    }

    public static class ReturnsNested {
        @ChalkFunction
        public static Map<String, Tagged> load(String key) {
            return Map.of();
        }
    }

    public static class ReturnsVoid {
        @ChalkFunction
        public static void log(String line) {}
    }

    public static class ArrayParam {
        @ChalkFunction
        public static int sum(int[] values) {
            return 0;
        }
    }

    public static class BadDefault {
        @ChalkFunction
        public static int page(@Default("\"ten\"") int size) {
            return size;
        }
    }

    public static class SameParamNames {
        @ChalkFunction
        public static int pair(@Param("x") int a, @Param("x") int b) {
            return a + b;
        }
    }

    public static class ScorerReturnsText {
        @ChalkScorer
        public static String grade(String output) {
            return output;
        }
    }

    public static class ScorerWithoutParameters {
        @ChalkScorer
        public static EvaluationScorerResult always() {
            return EvaluationScorerResult.of(1);
        }
    }

    public static class BadTimeout {
        @ChalkFunction(timeout = "5 minutes")
        public static int f(int x) {
            return x;
        }
    }

    public static class BadEnv {
        @ChalkFunction(env = {"MODE"})
        public static int f(int x) {
            return x;
        }
    }

    public static class BadEnvName {
        @ChalkFunction(env = {"MODE=fast", "OPENAI-API-KEY=sk-not-to-be-shown"})
        public static int f(int x) {
            return x;
        }
    }

    public static class BadReplicas {
        @ChalkFunction(minReplicas = 3, maxReplicas = 1)
        public static int f(int x) {
            return x;
        }
    }

    public static class BadMemory {
        @ChalkFunction(memory = "4 GB")
        public static int f(int x) {
            return x;
        }
    }

    public static class ImageTwice {
        @ChalkFunction(image = "debian", imageFactory = "image")
        public static int f(int x) {
            return x;
        }

        public static Image image() {
            return Image.base("debian");
        }
    }

    public static class MissingFactory {
        @ChalkFunction(imageFactory = "gpuImage")
        public static int f(int x) {
            return x;
        }
    }

    public static class FactoryNotStatic {
        @ChalkFunction(imageFactory = "image")
        public static int f(int x) {
            return x;
        }

        public Image image() {
            return Image.base("debian");
        }
    }

    public static class BothAnnotations {
        @ChalkFunction
        @ChalkScorer
        public static double f(String output) {
            return 0;
        }
    }

    /** Two valid functions and two mistakes of their own, side by side. */
    public static class Mixed {
        @ChalkFunction
        public static String echo(String text) {
            return text;
        }

        @ChalkFunction
        public static String takesObject(Object x) {
            return String.valueOf(x);
        }

        @ChalkFunction
        public static void returnsNothing(String line) {}

        @ChalkFunction
        public static int twice(int x) {
            return 2 * x;
        }
    }

    public static class NotPublic {
        @ChalkFunction
        static int hidden(int x) {
            return x;
        }
    }

    public static class NoAnnotations {
        public static int plain(int x) {
            return x;
        }
    }

    public static class NoConstructor {
        public NoConstructor(String required) {}

        @ChalkFunction
        public int f(int x) {
            return x;
        }
    }

    public static class BadName {
        @ChalkFunction(name = "has space")
        public static int f(int x) {
            return x;
        }
    }

    @ChalkClass(cpu = "2")
    public static class MethodWithDeploymentOptions {
        @ChalkFunction(memory = "1Gi", maxReplicas = 2)
        public int f(int x) {
            return x;
        }
    }

    public static class AddAgain {
        @ChalkFunction
        public static long add(long a, long b) {
            return a + b;
        }
    }
}
