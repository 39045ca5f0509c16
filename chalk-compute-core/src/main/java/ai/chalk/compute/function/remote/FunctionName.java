package ai.chalk.compute.function.remote;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The deployed name a method of a {@linkplain FunctionProxy proxied interface} calls, when it is not the method's
 * own name:
 * <pre>{@code
 * interface PricingApi {
 *     double price(String sku);                 // calls "price"
 *     @FunctionName("price_v2") double priceV2(String sku);
 * }
 * }</pre>
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface FunctionName {

    /** The function's deployed name. */
    String value();
}
