package ai.chalk.compute.function.deploy;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * The credentials an application's configuration files hold as written values ({@code spring.datasource.password:
 * hunter2}, not {@code ${DB_PASSWORD}}), warned about when a deploy snapshots them: the files travel with the code to
 * the server's store and into every replica, so a password written there is in both. Values are never logged.
 */
final class WrittenCredentials {

    private static final Logger log = LoggerFactory.getLogger(WrittenCredentials.class);

    /** Spring Boot's configuration files at the root of the class path and in its {@code config/}. */
    private static final Pattern CONFIG_FILE = Pattern.compile("(config/)?application[^/]*\\.(ya?ml|properties)");

    /** The last segment of a property that names a credential. */
    private static final Pattern CREDENTIAL = Pattern.compile(
            "(?i).*(password|passwd|secret|secret[-_]?key|token|api[-_]?key|access[-_]?key|private[-_]?key|credentials?)");

    /** Each file warned about once per JVM, not on every deploy of every function. */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private WrittenCredentials() {}

    /**
     * Warns, once per file, about each configuration file in {@code zip} (a class path directory's zip) that holds a
     * credential as a written value; {@code source} names the directory or jar it was made from.
     */
    static void warnAbout(Path zip, Path source) {
        try (ZipFile z = new ZipFile(zip.toFile())) {
            Enumeration<? extends ZipEntry> entries = z.entries();
            while (entries.hasMoreElements()) {
                ZipEntry e = entries.nextElement();
                if (e.isDirectory() || !CONFIG_FILE.matcher(e.getName()).matches()) {
                    continue;
                }
                List<String> keys;
                try (InputStream in = z.getInputStream(e)) {
                    keys = in(e.getName(), in);
                }
                String file = source + "!/" + e.getName();
                if (!keys.isEmpty() && WARNED.add(file)) {
                    log.warn(
                            "{} holds {} as written values: a deploy uploads it with the code, to the server and into"
                                    + " every replica of its functions; name a variable instead (${...}) or give"
                                    + " the functions Chalk secrets",
                            file,
                            String.join(", ", keys));
                }
            }
        } catch (IOException | RuntimeException e) {
            log.debug("cannot read the configuration files of {}: {}", source, e.toString());
        }
    }

    /** The properties of a configuration file named {@code name} that hold a credential as a written value. */
    static List<String> in(String name, InputStream in) throws IOException {
        List<String> keys = new ArrayList<>();
        Reader reader = new InputStreamReader(in, StandardCharsets.UTF_8);
        if (name.endsWith(".properties")) {
            Properties p = new Properties();
            p.load(reader);
            p.stringPropertyNames().stream()
                    .sorted()
                    .filter(k -> written(k, p.getProperty(k)))
                    .forEach(keys::add);
            return keys;
        }
        try {
            for (Object document : new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(reader)) {
                collect("", document, keys);
            }
        } catch (YAMLException e) {
            // a file Spring cannot read either: the application says so when it starts
        }
        return keys;
    }

    private static void collect(String path, Object node, List<String> keys) {
        if (node instanceof Map<?, ?> map) {
            map.forEach((k, v) -> collect(path.isEmpty() ? String.valueOf(k) : path + "." + k, v, keys));
        } else if (node instanceof List<?> list) {
            for (int i = 0; i < list.size(); i++) {
                collect(path + "[" + i + "]", list.get(i), keys);
            }
        } else if (node != null && written(path, node.toString()) && !keys.contains(path)) {
            keys.add(path);
        }
    }

    private static boolean written(String key, String value) {
        String last = key.substring(key.lastIndexOf('.') + 1).replaceAll("\\[\\d+]$", "");
        return CREDENTIAL.matcher(last).matches() && !value.isBlank() && !value.contains("${");
    }
}
