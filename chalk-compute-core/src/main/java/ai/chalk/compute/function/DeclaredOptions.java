package ai.chalk.compute.function;

import java.util.ArrayList;
import java.util.List;

/** The attributes the three annotations share, as written, so that they are read in one place. */
record DeclaredOptions(
        String name,
        String description,
        String image,
        String imageFactory,
        String cpu,
        String memory,
        String gpu,
        String[] env,
        String[] secrets,
        int minReplicas,
        int maxReplicas,
        String timeout,
        int retries,
        int concurrency,
        String network,
        String[] allowedHosts,
        String[] credentials) {

    static DeclaredOptions of(ChalkFunction a) {
        return new DeclaredOptions(
                a.name(),
                a.description(),
                a.image(),
                a.imageFactory(),
                a.cpu(),
                a.memory(),
                a.gpu(),
                a.env(),
                a.secrets(),
                a.minReplicas(),
                a.maxReplicas(),
                a.timeout(),
                a.retries(),
                a.concurrency(),
                a.network(),
                a.allowedHosts(),
                a.credentials());
    }

    static DeclaredOptions of(ChalkScorer a) {
        return new DeclaredOptions(
                a.name(),
                a.description(),
                a.image(),
                a.imageFactory(),
                a.cpu(),
                a.memory(),
                a.gpu(),
                a.env(),
                a.secrets(),
                a.minReplicas(),
                a.maxReplicas(),
                a.timeout(),
                a.retries(),
                a.concurrency(),
                a.network(),
                a.allowedHosts(),
                a.credentials());
    }

    static DeclaredOptions of(ChalkClass a) {
        return new DeclaredOptions(
                a.name(),
                "",
                a.image(),
                a.imageFactory(),
                a.cpu(),
                a.memory(),
                a.gpu(),
                a.env(),
                a.secrets(),
                a.minReplicas(),
                a.maxReplicas(),
                a.timeout(),
                a.retries(),
                a.concurrency(),
                a.network(),
                a.allowedHosts(),
                a.credentials());
    }

    /** The deployment options that were set, by attribute name; a class's method may set none. */
    List<String> deploymentAttributesSet() {
        List<String> set = new ArrayList<>();
        if (!image.isEmpty()) {
            set.add("image");
        }
        if (!imageFactory.isEmpty()) {
            set.add("imageFactory");
        }
        if (!cpu.isEmpty()) {
            set.add("cpu");
        }
        if (!memory.isEmpty()) {
            set.add("memory");
        }
        if (!gpu.isEmpty()) {
            set.add("gpu");
        }
        if (env.length > 0) {
            set.add("env");
        }
        if (secrets.length > 0) {
            set.add("secrets");
        }
        if (minReplicas != -1) {
            set.add("minReplicas");
        }
        if (maxReplicas != -1) {
            set.add("maxReplicas");
        }
        if (!network.equals("inherit")) {
            set.add("network");
        }
        if (allowedHosts.length > 0) {
            set.add("allowedHosts");
        }
        if (credentials.length > 0) {
            set.add("credentials");
        }
        return set;
    }
}
