package ai.chalk.compute.autoconfigure.function;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import org.springframework.asm.ClassReader;
import org.springframework.asm.ClassVisitor;
import org.springframework.asm.Label;
import org.springframework.asm.MethodVisitor;
import org.springframework.asm.SpringAsmInfo;
import org.springframework.asm.Type;

/**
 * Where a method is written, as a stack trace frame reads ({@code com.acme.Fns.score(Fns.java:12)}), so that a
 * log line pointing at a user's function is a link in IDEs and consoles. The file and line come from the class
 * file's debug attributes (read with Spring's ASM, without loading anything); without them the location is
 * {@code com.acme.Fns.score(Fns.java)} or {@code com.acme.Fns.score(Unknown Source)}.
 */
final class SourceLocation {

    private SourceLocation() {}

    /**
     * The method's location.
     *
     * @param method the method
     * @return {@code class.method(File.java:line)}, with as much as the class file tells
     */
    static String of(Method method) {
        Class<?> type = method.getDeclaringClass();
        String[] found = read(method); // {source file, first line}
        String file = found[0] != null ? found[0] : "Unknown Source";
        String line = found[0] != null && found[1] != null ? ":" + found[1] : "";
        return type.getName() + "." + method.getName() + "(" + file + line + ")";
    }

    private static String[] read(Method method) {
        Class<?> type = method.getDeclaringClass();
        String[] found = new String[2];
        String resource = type.getName().replace('.', '/') + ".class";
        ClassLoader loader = type.getClassLoader() != null ? type.getClassLoader() : ClassLoader.getSystemClassLoader();
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                return found;
            }
            String descriptor = Type.getMethodDescriptor(method);
            new ClassReader(in)
                    .accept(
                            new ClassVisitor(SpringAsmInfo.ASM_VERSION) {
                                @Override
                                public void visitSource(String source, String debug) {
                                    found[0] = source;
                                }

                                @Override
                                public MethodVisitor visitMethod(
                                        int access, String name, String desc, String signature, String[] exceptions) {
                                    if (!name.equals(method.getName()) || !desc.equals(descriptor)) {
                                        return null;
                                    }
                                    return new MethodVisitor(SpringAsmInfo.ASM_VERSION) {
                                        @Override
                                        public void visitLineNumber(int line, Label start) {
                                            // the lowest line is the method's first statement, where a debugger would
                                            // stop
                                            if (found[1] == null || line < Integer.parseInt(found[1])) {
                                                found[1] = Integer.toString(line);
                                            }
                                        }
                                    };
                                }
                            },
                            ClassReader.SKIP_FRAMES);
        } catch (IOException | RuntimeException e) {
            // a class file we cannot read only costs the line number
        }
        return found;
    }
}
