package ai.chalk.compute.git;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Removes secrets from a failed git command before it reaches a {@link GitException}: the password of the command's
 * credentials (as given and URL-encoded, as git may print it inside a URL) and any password written in a URL.
 */
final class SecretMask {

    /** The user-info part of URLs with a password: scheme://user:password@host. */
    private static final Pattern URL_PASSWORD = Pattern.compile("([A-Za-z][A-Za-z0-9+.-]*://[^/\\s@:]*):([^/\\s@]*)@");

    private final List<String> secrets = new ArrayList<>();

    /** @param auth the command's credentials, or {@code null} when it had none */
    SecretMask(GitCredentials auth) {
        if (auth != null && !auth.password().isEmpty()) {
            String password = auth.password();
            secrets.add(password);
            String encoded = URLEncoder.encode(password, StandardCharsets.UTF_8).replace("+", "%20");
            if (!encoded.equals(password)) {
                secrets.add(encoded);
            }
        }
    }

    /** Replaces the password of any {@code scheme://user:password@} in the text with {@code ****}. */
    static String maskUrls(String text) {
        return URL_PASSWORD.matcher(text).replaceAll(m -> Matcher.quoteReplacement(m.group(1) + ":****@"));
    }

    String text(String text) {
        String masked = maskUrls(text);
        for (String secret : secrets) {
            masked = masked.replace(secret, "****");
        }
        return masked;
    }

    /** The command line as the exception shows it: {@code git} and its masked arguments. */
    List<String> command(List<String> args) {
        List<String> command = new ArrayList<>(args.size() + 1);
        command.add("git");
        for (String arg : args) {
            command.add(text(arg));
        }
        return command;
    }
}
