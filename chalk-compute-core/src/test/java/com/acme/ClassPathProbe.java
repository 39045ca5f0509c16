package com.acme;

import java.net.URL;
import java.security.CodeSource;

/**
 * Run in a JVM of its own: prints, for each argument, a line {@code name=where}: the class path entry the class
 * was loaded from or the URL of the resource, or {@code missing}. A name holding a {@code /} is a resource (one at
 * the root is written with a leading {@code /}), any other a class.
 */
public final class ClassPathProbe {

    private ClassPathProbe() {}

    public static void main(String[] args) {
        ClassLoader loader = ClassPathProbe.class.getClassLoader();
        for (String name : args) {
            System.out.println(name + "=" + (name.contains("/") ? resource(loader, name) : classSource(loader, name)));
        }
    }

    private static String resource(ClassLoader loader, String name) {
        URL url = loader.getResource(name.startsWith("/") ? name.substring(1) : name);
        return url == null ? "missing" : url.toString();
    }

    private static String classSource(ClassLoader loader, String name) {
        try {
            CodeSource source =
                    Class.forName(name, false, loader).getProtectionDomain().getCodeSource();
            return source == null ? "unknown" : source.getLocation().toString();
        } catch (ClassNotFoundException e) {
            return "missing";
        }
    }
}
