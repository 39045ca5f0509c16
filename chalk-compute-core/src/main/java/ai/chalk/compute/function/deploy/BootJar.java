package ai.chalk.compute.function.deploy;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;

/**
 * A Spring Boot executable jar or war, read with {@code java.util.jar} alone: the class path Boot's launcher gives
 * the application, as plain entries a JVM takes with {@code -cp} and no launcher.
 * <ul>
 * <li>The <b>application classes</b>: the {@code Spring-Boot-Classes} directory ({@code BOOT-INF/classes/}) and,
 *     in a jar, the application's {@code META-INF} files (and {@code module-info.class}) that Boot's repackaging
 *     leaves at the jar's root, where the application still sees them through the system class loader. Together
 *     they are the files of the build's classes directory ({@code target/classes}), so their deterministic zip has
 *     the digest that directory's has. Packaging's own files are left out: the manifest, {@code META-INF/maven/},
 *     signatures, the launcher's classes and the launcher's service registrations.</li>
 * <li>The <b>libraries</b>: the nested jars under {@code Spring-Boot-Lib} (and a war's
 *     {@code WEB-INF/lib-provided/}) in the launcher's order: those {@code classpath.idx} does not list in archive
 *     order, then those it lists in its order (a listed jar the archive lacks is skipped, as the launcher finds
 *     nothing there). Boot's jarmode tools jar is left out: only {@code java -Djarmode=tools} uses it.</li>
 * </ul>
 */
final class BootJar implements Closeable {

    private static final Attributes.Name CLASSES = new Attributes.Name("Spring-Boot-Classes");
    private static final Attributes.Name LIB = new Attributes.Name("Spring-Boot-Lib");
    private static final Attributes.Name INDEX = new Attributes.Name("Spring-Boot-Classpath-Index");
    private static final String LOADER = "org.springframework.boot.loader.";
    private static final String WAR_PROVIDED = "WEB-INF/lib-provided/";

    private final Path file;
    private final JarFile jar;
    private final String classes;
    private final String index;
    private final List<String> libraryDirectories;

    private BootJar(Path file, JarFile jar, Attributes main) {
        this.file = file;
        this.jar = jar;
        this.classes = directory(main.getValue(CLASSES), "BOOT-INF/classes/");
        String lib = directory(main.getValue(LIB), "BOOT-INF/lib/");
        this.libraryDirectories = isWar() && !lib.equals(WAR_PROVIDED) ? List.of(lib, WAR_PROVIDED) : List.of(lib);
        String prefix = classes.substring(0, classes.indexOf('/', 0) + 1); // BOOT-INF/ or WEB-INF/, as the launcher
        this.index = Optional.ofNullable(main.getValue(INDEX)).orElse(prefix + "classpath.idx");
    }

    /**
     * The executable jar a file is, if it is one: a zip whose manifest names {@code Spring-Boot-Classes} or
     * {@code Spring-Boot-Lib}.
     *
     * @param file a class path entry that is a file
     * @return the jar, to close; empty for any other file, a file that is no zip included
     * @throws IOException when the file cannot be read
     */
    static Optional<BootJar> open(Path file) throws IOException {
        JarFile jar;
        try {
            jar = new JarFile(file.toFile(), false);
        } catch (ZipException notAZip) {
            return Optional.empty(); // uploaded as it is, as any other file on the class path
        }
        try {
            Manifest manifest = jar.getManifest();
            Attributes main = manifest == null ? null : manifest.getMainAttributes();
            if (main == null || (main.getValue(CLASSES) == null && main.getValue(LIB) == null)) {
                jar.close();
                return Optional.empty();
            }
            return Optional.of(new BootJar(file, jar, main));
        } catch (IOException | RuntimeException e) {
            jar.close();
            throw e;
        }
    }

    /** The jar's file. */
    Path file() {
        return file;
    }

    /**
     * Writes the application classes as the deterministic zip {@link DeterministicZip#write(Path, Path)} makes of
     * the classes directory they came from.
     *
     * @param zip the zip to write
     */
    void writeClasses(Path zip) throws IOException {
        Map<String, String> tree = new TreeMap<>(); // path in the classes directory -> entry name; null for a directory
        List<? extends ZipEntry> all = Collections.list(jar.entries());
        for (ZipEntry entry : all) {
            String name = entry.getName();
            if (name.startsWith(classes) && name.length() > classes.length()) {
                add(tree, name.substring(classes.length()), entry.isDirectory() ? null : name);
            }
        }
        if (!isWar()) {
            // a war's root holds web content, which is not on the class path; a jar's root holds the application's
            // META-INF, which is
            for (ZipEntry entry : all) {
                String name = entry.getName();
                if (!tree.containsKey(name) && isApplicationRootFile(entry)) {
                    add(tree, name, name);
                }
            }
        }
        DeterministicZip.write(
                tree.keySet(), path -> jar.getInputStream(jar.getEntry(tree.get(path))), file + "!/" + classes, zip);
    }

    /**
     * The nested libraries' entry names, in class path order.
     *
     * @return names such as {@code BOOT-INF/lib/spring-core-7.0.8.jar}
     */
    List<String> libraries() throws IOException {
        Set<String> inArchive = new LinkedHashSet<>();
        for (ZipEntry entry : Collections.list(jar.entries())) {
            if (!entry.isDirectory() && isLibrary(entry.getName())) {
                inArchive.add(entry.getName());
            }
        }
        List<String> indexed = indexed();
        List<String> ordered = new ArrayList<>();
        inArchive.stream().filter(name -> !indexed.contains(name)).forEach(ordered::add);
        indexed.stream().filter(inArchive::contains).forEach(ordered::add);
        return ordered;
    }

    /**
     * Copies a nested library out.
     *
     * @param library its entry name, one of {@link #libraries()}
     * @param out     the file to write
     */
    void extract(String library, Path out) throws IOException {
        try (InputStream in = jar.getInputStream(jar.getEntry(library))) {
            Files.copy(in, out);
        }
    }

    @Override
    public void close() throws IOException {
        jar.close();
    }

    private boolean isWar() {
        return classes.startsWith("WEB-INF/");
    }

    private boolean isLibrary(String name) {
        return libraryDirectories.stream().anyMatch(name::startsWith)
                && !fileName(name).startsWith("spring-boot-jarmode-");
    }

    /** The names {@code classpath.idx} lists, in its order: lines such as {@code - "BOOT-INF/lib/a.jar"}. */
    private List<String> indexed() throws IOException {
        ZipEntry entry = jar.getEntry(index);
        if (entry == null) {
            return List.of();
        }
        String text;
        try (InputStream in = jar.getInputStream(entry)) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        List<String> names = new ArrayList<>();
        for (String line : text.split("\n")) {
            line = line.strip();
            if (line.startsWith("- \"") && line.endsWith("\"") && line.length() > 4) {
                names.add(line.substring(3, line.length() - 1));
            } else if (!line.isEmpty()) {
                throw new IOException(file + "!/" + index + " has a line that is not - \"name\": " + line);
            }
        }
        return names;
    }

    /** A file at the jar's root that came from the application's classes directory. */
    private boolean isApplicationRootFile(ZipEntry entry) throws IOException {
        String name = entry.getName();
        if (entry.isDirectory()) {
            return false; // a directory holding application files is added with them
        }
        if (name.equals("module-info.class")) {
            return true;
        }
        if (!name.startsWith("META-INF/")) {
            return false; // the launcher's classes, and BOOT-INF/
        }
        String inMetaInf = name.substring("META-INF/".length());
        if (inMetaInf.equals("MANIFEST.MF") || inMetaInf.equals("INDEX.LIST") || inMetaInf.startsWith("maven/")) {
            return false; // written by the jar tool from the build, not taken from the classes directory
        }
        if (!inMetaInf.contains("/") && isSignature(inMetaInf)) {
            return false; // signatures of the jar, Boot's BOOT.SF marker included; they do not sign loose files
        }
        return !(inMetaInf.startsWith("services/") && isLoaderService(entry));
    }

    private static boolean isSignature(String name) {
        String upper = name.toUpperCase(Locale.ROOT);
        return upper.endsWith(".SF")
                || upper.endsWith(".DSA")
                || upper.endsWith(".RSA")
                || upper.endsWith(".EC")
                || upper.startsWith("SIG-");
    }

    /** A service registration naming only the launcher's classes, such as its nested-jar file system provider. */
    private boolean isLoaderService(ZipEntry entry) throws IOException {
        String text;
        try (InputStream in = jar.getInputStream(entry)) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        List<String> providers = text.lines()
                .map(line -> line.replaceFirst("#.*", "").strip())
                .filter(line -> !line.isEmpty())
                .toList();
        return !providers.isEmpty() && providers.stream().allMatch(p -> p.startsWith(LOADER));
    }

    /** Adds a file or directory and the directories above it, as a walk of the directory would list them. */
    private static void add(Map<String, String> tree, String path, String entryName) {
        String key = entryName == null && !path.endsWith("/") ? path + "/" : path;
        tree.putIfAbsent(key, entryName);
        for (int slash = key.indexOf('/');
                slash >= 0 && slash < key.length() - 1;
                slash = key.indexOf('/', slash + 1)) {
            tree.putIfAbsent(key.substring(0, slash + 1), null);
        }
    }

    private static String directory(String value, String otherwise) {
        if (value == null || value.isBlank()) {
            return otherwise;
        }
        String trimmed = value.strip();
        return trimmed.endsWith("/") ? trimmed : trimmed + "/";
    }

    static String fileName(String entryName) {
        return entryName.substring(entryName.lastIndexOf('/') + 1);
    }
}
