package com.acme.fatjar.config;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * The application's own auto-configuration, registered in its {@code META-INF/spring/...AutoConfiguration.imports},
 * which Boot's repackaging leaves at the executable jar's root; its value comes from the application's
 * {@code application.properties}, in {@code BOOT-INF/classes}.
 */
@AutoConfiguration
public class SalutationAutoConfiguration {

    @Bean
    Salutation salutation(@Value("${fatjar.salutation}") String text) {
        return new Salutation(text);
    }
}
