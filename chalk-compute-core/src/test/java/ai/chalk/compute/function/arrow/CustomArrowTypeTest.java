package ai.chalk.compute.function.arrow;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.util.Currency;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/** A user's own type, taught to the mapping with a {@link CustomArrowType}. */
class CustomArrowTypeTest {

    /** Not a record, so the standard mapping cannot describe it. */
    static final class Money {
        private final Currency currency;
        private final BigDecimal amount;

        Money(Currency currency, BigDecimal amount) {
            this.currency = currency;
            this.amount = amount;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Money m && m.currency.equals(currency) && m.amount.compareTo(amount) == 0;
        }

        @Override
        public int hashCode() {
            return currency.hashCode();
        }
    }

    record StoredMoney(String currency, BigDecimal amount) {}

    static final class MoneyType implements CustomArrowType<Money, StoredMoney> {
        @Override
        public Class<Money> javaType() {
            return Money.class;
        }

        @Override
        public Class<StoredMoney> storageType() {
            return StoredMoney.class;
        }

        @Override
        public StoredMoney toStorage(Money value) {
            if (value.amount.signum() < 0) {
                throw new IllegalArgumentException("negative amounts are not sent");
            }
            return new StoredMoney(value.currency.getCurrencyCode(), value.amount);
        }

        @Override
        public Money fromStorage(StoredMoney storage, DecodeContext context) {
            return new Money(Currency.getInstance(storage.currency()), storage.amount());
        }

        @Override
        public Map<String, String> metadata() {
            return Map.of("com.acme.unit", "minor");
        }
    }

    record Invoice(String id, List<Money> lines, Optional<Money> discount) {}

    private final ArrowTypeMapping mapping = ArrowTypeMapping.standard().with(new MoneyType());

    @Test
    void aCustomTypeTravelsAsItsStorageMarkedWithItsJavaType() {
        Field field = mapping.field("price", Money.class);
        assertThat(field.getType()).isEqualTo(ArrowType.Struct.INSTANCE);
        assertThat(field.isNullable()).isFalse();
        assertThat(field.getMetadata())
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "chalk.java.type",
                        "ai.chalk.compute.function.arrow.CustomArrowTypeTest$Money",
                        "com.acme.unit",
                        "minor"));
        assertThat(field.getChildren()).extracting(Field::getName).containsExactly("currency", "amount");
        assertThatThrownBy(() -> ArrowTypeMapping.standard().field("price", Money.class))
                .isInstanceOf(UnsupportedJavaTypeException.class);

        Money eur = new Money(Currency.getInstance("EUR"), new BigDecimal("12.30"));
        Invoice invoice = new Invoice(
                "inv-1", List.of(eur, new Money(Currency.getInstance("USD"), BigDecimal.ONE)), Optional.of(eur));
        RowCodec codec = RowCodec.of(
                new Schema(List.of(mapping.field("invoice", Invoice.class))), List.of(Invoice.class), mapping);
        List<Object[]> rows = codec.decode(
                codec.encode(List.<Object[]>of(
                        new Object[] {invoice}, new Object[] {new Invoice("inv-2", List.of(), Optional.empty())})),
                DecodeContext.empty());
        assertThat(rows.get(0)).containsExactly(invoice);
        assertThat(rows.get(1)).containsExactly(new Invoice("inv-2", List.of(), Optional.empty()));
    }

    @Test
    void aValueTheCustomTypeRefusesIsReportedWhereItIs() {
        RowCodec codec = RowCodec.of(
                new Schema(List.of(mapping.field("invoice", Invoice.class))), List.of(Invoice.class), mapping);
        Invoice invoice = new Invoice(
                "inv-3", List.of(new Money(Currency.getInstance("EUR"), new BigDecimal("-1"))), Optional.empty());
        assertThatThrownBy(() -> codec.encode(List.<Object[]>of(new Object[] {invoice})))
                .isInstanceOf(ArrowPayloadException.class)
                .hasMessage("row 0, column 'invoice' at invoice.lines[0]: negative amounts are not sent");
    }
}
