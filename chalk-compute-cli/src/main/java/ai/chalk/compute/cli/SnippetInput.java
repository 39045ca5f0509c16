package ai.chalk.compute.cli;

import ai.chalk.compute.code.Language;
import org.jline.reader.EOFError;
import org.jline.reader.ParsedLine;
import org.jline.reader.impl.DefaultParser;

/**
 * When the REPL's input is a whole snippet. Enter on an unfinished one (an open bracket or string, a trailing
 * backslash, a Python block whose blank closing line has not come) continues it on a new line, as Python's own REPL
 * does; JLine asks this parser on each Enter.
 */
final class SnippetInput extends DefaultParser {

    private final Language language;

    SnippetInput(Language language) {
        this.language = language;
    }

    @Override
    public ParsedLine parse(String line, int cursor, ParseContext context) {
        if (context == ParseContext.ACCEPT_LINE && !isComplete(language, line)) {
            throw new EOFError(-1, cursor, "the snippet continues", "... ");
        }
        return super.parse(line, cursor, context);
    }

    /** Whether {@code text} is a snippet to run now rather than the start of a longer one. */
    static boolean isComplete(Language language, String text) {
        if (text.isBlank()) {
            return true;
        }
        Scan scan = scan(language, text);
        if (scan.openString || scan.depth > 0 || text.endsWith("\\")) {
            return false;
        }
        if (language == Language.PYTHON && scan.opensBlock) {
            // a block ends at a blank line, as in Python's REPL: "for i in x:" and its body wait for it
            String last = text.substring(text.lastIndexOf('\n') + 1);
            return text.contains("\n") && last.isBlank();
        }
        return true;
    }

    /** What a pass over the text found outside strings and comments. */
    private record Scan(int depth, boolean openString, boolean opensBlock) {}

    private static Scan scan(Language language, String text) {
        int depth = 0;
        boolean opensBlock = false;
        String quote = null;
        boolean blockComment = false;
        char lastCode = '\n';
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            if (blockComment) {
                if (text.startsWith("*/", i)) {
                    blockComment = false;
                    i += 2;
                    continue;
                }
                i++;
                continue;
            }
            if (quote != null) {
                if (c == '\\') {
                    i += 2;
                    continue;
                }
                if (text.startsWith(quote, i)) {
                    i += quote.length();
                    quote = null;
                    continue;
                }
                if (c == '\n' && quote.length() == 1) {
                    quote = null; // an unterminated one-line string: the language reports it, not the REPL
                }
                i++;
                continue;
            }
            if (c == '\n') {
                opensBlock |= lastCode == ':';
                lastCode = '\n';
                i++;
                continue;
            }
            boolean python = language == Language.PYTHON;
            if ((python && c == '#') || (!python && text.startsWith("//", i))) {
                int end = text.indexOf('\n', i);
                i = end < 0 ? text.length() : end;
                continue;
            }
            if (!python && text.startsWith("/*", i)) {
                blockComment = true;
                i += 2;
                continue;
            }
            if (c == '"' || c == '\'') {
                String triple = String.valueOf(c).repeat(3);
                quote = text.startsWith(triple, i) && (python || c == '"') ? triple : String.valueOf(c);
                i += quote.length();
                lastCode = c;
                continue;
            }
            if (c == '(' || c == '[' || c == '{') {
                depth++;
            } else if (c == ')' || c == ']' || c == '}') {
                depth = Math.max(0, depth - 1);
            }
            if (!Character.isWhitespace(c)) {
                lastCode = c;
            }
            i++;
        }
        opensBlock |= lastCode == ':';
        // an open one-line string is the language's error to report; an open text block or comment continues
        return new Scan(depth, (quote != null && quote.length() == 3) || blockComment, opensBlock);
    }
}
