package ai.chalk.compute.sample;

import ai.chalk.compute.function.ChalkFunction;
import ai.chalk.compute.function.ChalkScorer;
import java.util.Map;
import java.util.TreeMap;
import org.springframework.stereotype.Component;

/**
 * The sample's functions: the starter finds them at startup and deploys them in the background; any process can then
 * call them by name ({@code RemoteFunction.fromName(client, "price").call("sku-42", 3)}).
 */
@Component
public class Pricing {

    private static final Map<String, Double> UNIT_PRICES = new TreeMap<>(Map.of("sku-42", 9.99, "sku-7", 24.50));

    @ChalkFunction(description = "The price of an order line, in euros")
    public double price(String sku, int quantity) {
        Double unit = UNIT_PRICES.get(sku);
        if (unit == null) {
            throw new IllegalArgumentException("no price for " + sku + "; known: " + UNIT_PRICES.keySet());
        }
        return Math.round(unit * quantity * 100) / 100.0;
    }

    @ChalkFunction(description = "A one-line quote for an order line")
    public String quote(String sku, int quantity) {
        return quantity + " x " + sku + " = " + price(sku, quantity) + " EUR";
    }

    /** Scores a predicted price against the expected one: 1 when within a cent, falling to 0 at 10 % off. */
    @ChalkScorer
    public double priceAccuracy(double output, double expected) {
        double error = Math.abs(output - expected) / Math.max(Math.abs(expected), 0.01);
        return error <= 0.001 ? 1.0 : Math.max(0.0, 1.0 - error * 10);
    }
}
