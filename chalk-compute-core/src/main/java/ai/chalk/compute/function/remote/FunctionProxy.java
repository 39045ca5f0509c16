package ai.chalk.compute.function.remote;

import ai.chalk.compute.sandbox.SandboxClient;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Proxy;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An implementation of an interface whose methods call deployed functions by name: a method calls the function of
 * its own name, or the one its {@link FunctionName} says.
 * <pre>{@code
 * interface PricingApi {
 *     double price(String sku, int quantity);
 *     CompletableFuture<Double> price(String sku);   // queued, see RemoteFunction#callAsync
 * }
 * PricingApi pricing = client.functions().proxy(PricingApi.class);
 * double p = pricing.price("sku-1", 3);
 * }</pre>
 * Each method attaches to its function at its first call, pinned to the version current then (a method whose
 * function is not deployed yet throws {@link ai.chalk.compute.error.FunctionNotFoundException} and attaches at a
 * later call). Results are converted as {@link TypedFunction} does; a method returning {@link CompletableFuture}
 * queues the call. Default methods run as written; {@code equals}, {@code hashCode} and {@code toString} are the
 * proxy's own. Thread-safe.
 */
public final class FunctionProxy {

    private FunctionProxy() {}

    /**
     * A proxy calling the functions deployed on the client's server.
     *
     * @param client the client
     * @param api    the interface
     * @param <T>    the interface
     * @return the proxy
     * @throws IllegalArgumentException when {@code api} is not an interface
     */
    public static <T> T create(SandboxClient client, Class<T> api) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(api, "api");
        if (!api.isInterface()) {
            throw new IllegalArgumentException(api.getName() + " is not an interface: a proxy implements one");
        }
        Map<Method, RemoteFunction> attached = new ConcurrentHashMap<>();
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getDeclaringClass() == Object.class) {
                return switch (method.getName()) {
                    case "equals" -> proxy == args[0];
                    case "hashCode" -> System.identityHashCode(proxy);
                    default -> "FunctionProxy[" + api.getName() + "]";
                };
            }
            if (method.isDefault()) {
                return InvocationHandler.invokeDefault(proxy, method, args);
            }
            RemoteFunction function =
                    attached.computeIfAbsent(method, m -> RemoteFunction.fromName(client, functionName(m)));
            Object[] arguments = args == null ? new Object[0] : args;
            if (method.getReturnType() == CompletableFuture.class) {
                Class<?> element = futureElement(method.getGenericReturnType());
                return function.callAsync(arguments).thenApply(r -> Results.as(r, element, function.name()));
            }
            Object result = function.call(arguments);
            return method.getReturnType() == void.class
                    ? null
                    : Results.as(result, method.getReturnType(), function.name());
        };
        return api.cast(Proxy.newProxyInstance(api.getClassLoader(), new Class<?>[] {api}, handler));
    }

    private static String functionName(Method method) {
        FunctionName name = method.getAnnotation(FunctionName.class);
        return name == null ? method.getName() : name.value();
    }

    private static Class<?> futureElement(Type type) {
        if (type instanceof ParameterizedType p) {
            Type element = p.getActualTypeArguments()[0];
            if (element instanceof Class<?> c) {
                return c;
            }
            if (element instanceof ParameterizedType e && e.getRawType() instanceof Class<?> raw) {
                return raw;
            }
        }
        return Object.class;
    }
}
